#!/usr/bin/env python3
"""The table that settles whether learning pays (docs/learned.md, "The settling table").

Reads the JSON of `dplace bench --suite learned --json` runs (bench/settle.sh makes them: one per
seed and cluster; the regimes zero-shot, guided-64, equal-1000, guided-1000, equal-10000,
guided-10000, search-1s, guided-1s, search-2s, guided-2s, search-10s, guided-10s and the ladders
plain-curve and guided-curve) and prints, in markdown:
  - per budget and placer (learned, guided search, plain search): geomean R (value / mcmc at 10 s)
    on the same-family split, the unseen-family split and the bundled real models (models/*.onnx,
    a part of the same-family split), with the evaluations each spent;
  - per budget, guided / plain for mcmc and local_search: geomean over every row, over the rows
    where plain is at least 3% above the best value known for the row, the worst row, and plain
    mcmc's run-to-run spread (worst seed over best, per row, where several seeds ran);
  - from the ladders: per row the evaluations guided mcmc needs to reach plain mcmc's value at
    10,000 evaluations (the first rung at or below it), as a share of 10,000.
Runs with the parts' regimes (bench/settle.sh --parts: bandit-B, hand-B, learned-B beside the plain
regimes) print instead, per budget and part, with / without (mcmc.control=bandit, guide=hand,
guide=learned against the same search plain): geomean over every row, over the rows where plain is
at least 3% above the lower bound, per split, the worst row, and the rows worse than plain mcmc's
run-to-run spread; then each bundled model's gap to the lower bound, (value - bound) / value,
after plain mcmc at 10 s and after the best of mcmc's parts at 10 s.
Non-trivial rows only (the bench marks as trivial the rows where `single` is within 5% of the
bound). Usage: settle.py BENCH.json [BENCH.json ...]
"""
import collections
import json
import math
import sys

MODELS = {"inception_v3", "nmt", "rnnlm", "wavenet"}  # the bundled real models' workload stems
BUDGETS = [  # (budget, regime of the learned and plain placers, regime of the guided searches)
    ("64 evaluations", "zero-shot", "guided-64"),
    ("1,000 evaluations", "equal-1000", "guided-1000"),
    ("10,000 evaluations", "equal-10000", "guided-10000"),
    ("1 s", "search-1s", "guided-1s"),
    ("2 s", "search-2s", "guided-2s"),
    ("10 s", "search-10s", "guided-10s"),
]
# The parts added to the searches (docs/learned.md, "The parts at equal budgets"): regime
# PART-SUFFIX runs them at the budget of the plain regime beside it.
PARTS = [("bandit", "mcmc", "mcmc.control=bandit"), ("hand", "mcmc", "mcmc.guide=hand"),
         ("learned", "mcmc", "mcmc.guide=learned"), ("hand", "local_search", "local_search.guide=hand"),
         ("learned", "local_search", "local_search.guide=learned")]
PART_BUDGETS = [("1,000 evaluations", "equal-1000", "1000"), ("10,000 evaluations", "equal-10000", "10000"),
                ("1 s", "search-1s", "1s"), ("2 s", "search-2s", "2s"), ("10 s", "search-10s", "10s")]
LEARNED = ("gdp", "placeto")
SEARCHES = ("mcmc", "local_search")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def is_model(workload):
    """The bundled real models (models/*.onnx); a later workload of the same name (PipeDream's
    Inception-v3 profile, before the suite named it apart) is "NAME#2"."""
    return workload.split("@")[0] in MODELS and "#" not in workload


def load(paths):
    """rows[(workload, regime, placer)] = [(value, evaluations)] over the runs (seeds); split, best
    known value and lower bound per workload."""
    rows = collections.defaultdict(list)
    split, best, bound = {}, {}, {}
    for path in paths:
        with open(path) as f:
            bench = json.load(f)
        seen = collections.Counter()
        for w in bench["workloads"]:
            seen[w["workload"]] += 1
            name = w["workload"] + (f"#{seen[w['workload']]}" if seen[w["workload"]] > 1 else "")
            if w.get("trivial"):
                continue
            split[name] = w["split"]
            bound[name] = w.get("lower_bound", 0)
            for r in w["results"]:
                if not r.get("feasible", True) or not r.get("value"):
                    continue
                regime, placer = r["placer"].split("/", 1)
                rows[(name, regime, placer)].append((r["value"], r.get("evaluations", 0)))
                best[name] = min(best.get(name, math.inf), r["value"])
    return rows, split, best, bound


def spread_of(rows, workloads, regime):
    """Plain mcmc's run-to-run spread per workload: worst seed over best, where several ran."""
    spread = {}
    for w in workloads:
        runs = [v for v, _ in rows.get((w, regime, "mcmc"), [])]
        if len(runs) > 1:
            spread[w] = max(runs) / min(runs)
    return spread


def parts(rows, split, bound, workloads):
    """The parts against plain at each budget, and the gaps to the bound at 10 s."""
    groups = [("same-family", lambda w: split[w] == "same-family"),
              ("unseen-family", lambda w: split[w] == "unseen-family"),
              ("bundled real models", is_model)]
    print("| budget | part | with / without, all rows | rows ≥ 3% above the bound | "
          + " | ".join(g for g, _ in groups) + " | worst row | rows worse than plain mcmc's spread |")
    print("|---|---|---|---|" + "---|" * len(groups) + "---|---|")
    for budget, plain, suffix in PART_BUDGETS:
        spread = spread_of(rows, workloads, plain)
        for part, placer, option in PARTS:
            regime = f"{part}-{suffix}"
            pairs = {w: rows[(w, regime, placer)][0][0] / rows[(w, plain, placer)][0][0] for w in workloads
                     if (w, regime, placer) in rows and (w, plain, placer) in rows}
            if not pairs:
                continue
            hard = [r for w, r in pairs.items() if rows[(w, plain, placer)][0][0] >= 1.03 * bound[w]]
            worst = max(pairs.items(), key=lambda p: p[1])
            beyond = [w for w, r in pairs.items() if w in spread and r > spread[w]]
            cells = " | ".join(
                (lambda rs: f"{geomean(rs):.4f} ({len(rs)})" if rs else "—")(
                    [r for w, r in pairs.items() if keep(w)]) for _, keep in groups)
            print(f"| {budget} | {option} | {geomean(list(pairs.values())):.4f} ({len(pairs)}) | "
                  + (f"{geomean(hard):.4f} ({len(hard)})" if hard else "— (0)")
                  + f" | {cells} | {worst[1]:.3f} ({worst[0]}) | {len(beyond)} of {len(spread)} |")
    print()
    print("| row | lower bound | plain mcmc 10 s: gap | best part at 10 s: gap | gap halved |")
    print("|---|---|---|---|---|")
    halved = total = 0
    for w in sorted(workloads):
        if not is_model(w) or (w, "search-10s", "mcmc") not in rows or not bound.get(w):
            continue
        plain = rows[(w, "search-10s", "mcmc")][0][0]
        with_parts = [(rows[(w, f"{part}-10s", placer)][0][0], option) for part, placer, option in PARTS
                      if placer == "mcmc" and (w, f"{part}-10s", placer) in rows]
        if not with_parts:
            continue
        value, option = min(with_parts)
        gap, best_gap = 1 - bound[w] / plain, 1 - bound[w] / value  # as dplace reports it
        total += 1
        halved += best_gap <= gap / 2
        print(f"| {w} | {bound[w] * 1e3:.4g} ms | {100 * gap:.1f}% | {100 * best_gap:.1f}% ({option}) | "
              f"{'yes' if best_gap <= gap / 2 else 'no'} |")
    if total:
        print(f"\nGap halved on {halved} of {total} rows.")


def main(paths):
    rows, split, best, bound = load(paths)
    if any(k[1].startswith("bandit-") for k in rows):
        parts(rows, split, bound, sorted(split))
        return
    reference = {w: rows[(w, "reference", "mcmc")][0][0] for w in split if (w, "reference", "mcmc") in rows}
    groups = [("same-family", lambda w: split[w] == "same-family"),
              ("unseen-family", lambda w: split[w] == "unseen-family"),
              ("bundled real models", is_model)]

    def cell(regime, placer, keep):
        rs = [rows[(w, regime, placer)][0][0] / reference[w] for w in reference
              if keep(w) and (w, regime, placer) in rows]
        return f"{geomean(rs):.3f} ({len(rs)})" if rs else "—"

    def evaluations(regime, placer):
        es = [rows[k][0][1] for k in rows if k[1] == regime and k[2] == placer]
        return f"{sum(es) / len(es):,.0f}" if es else "—"

    print("| budget | placer | " + " | ".join(g for g, _ in groups) + " | mean evaluations |")
    print("|---|---|" + "---|" * len(groups) + "---|")
    for budget, plain, guided in BUDGETS:
        for kind, regime, placers in (("learned", plain, LEARNED), ("guided", guided, SEARCHES),
                                      ("plain", plain, SEARCHES)):
            for p in placers:
                if not any(k[1] == regime and k[2] == p for k in rows):
                    continue
                cells = " | ".join(cell(regime, p, keep) for _, keep in groups)
                print(f"| {budget} | {kind} {p} | {cells} | {evaluations(regime, p)} |")
    print()
    print("| budget | search | guided / plain, all rows | rows plain ≥ 3% above best | worst row "
          "| plain mcmc run-to-run spread (geomean, worst) | rows worse than their spread |")
    print("|---|---|---|---|---|---|---|")
    for budget, plain, guided in BUDGETS:
        spread = {}
        for w in reference:
            runs = [v for v, _ in rows.get((w, plain, "mcmc"), [])]
            if len(runs) > 1:
                spread[w] = max(runs) / min(runs)
        for s in SEARCHES:
            pairs = [(w, rows[(w, guided, s)][0][0] / rows[(w, plain, s)][0][0]) for w in reference
                     if (w, guided, s) in rows and (w, plain, s) in rows]
            if not pairs:
                continue
            hard = [r for w, r in pairs if rows[(w, plain, s)][0][0] >= 1.03 * best[w]]
            worst = max(pairs, key=lambda p: p[1])
            beyond = [w for w, r in pairs if w in spread and r > spread[w]]
            sp = (f"{geomean(list(spread.values())):.3f}, {max(spread.values()):.3f}"
                  if spread else "—")
            print(f"| {budget} | {s} | {geomean([r for _, r in pairs]):.3f} ({len(pairs)}) | " + (
                  f"{geomean(hard):.3f} ({len(hard)})" if hard else "— (0)") + f" | {worst[1]:.3f} ({worst[0]}) | {sp} | "
                  f"{len(beyond)} of {len(spread)} |")
    print()
    ladder = collections.defaultdict(dict)
    for (w, regime, placer), runs in rows.items():
        if "@" in regime and placer == "mcmc":
            name, rung = regime.split("@")
            ladder[(w, name)][int(rung)] = runs[0][0]
    shares = []
    for w in reference:
        plain, guided = ladder.get((w, "plain-curve"), {}), ladder.get((w, "guided-curve"), {})
        if not plain or not guided:
            continue
        target = plain[max(plain)]
        reached = [e for e in sorted(guided) if guided[e] <= target]
        shares.append(reached[0] / max(plain) if reached else math.inf)
    if shares:
        finite = sorted(shares)
        print(f"Guided mcmc reaches plain mcmc's value at {max(plain):,} evaluations within the "
              f"ladder's rungs on {sum(math.isfinite(s) for s in shares)} of {len(shares)} rows; "
              f"median share of the evaluations {finite[len(finite) // 2]:.3g} "
              f"(rows within a third: {sum(s <= 1 / 3 for s in shares)}).")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
