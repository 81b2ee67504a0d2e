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
LEARNED = ("gdp", "placeto")
SEARCHES = ("mcmc", "local_search")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def is_model(workload):
    """The bundled real models (models/*.onnx); a later workload of the same name (PipeDream's
    Inception-v3 profile, before the suite named it apart) is "NAME#2"."""
    return workload.split("@")[0] in MODELS and "#" not in workload


def load(paths):
    """rows[(workload, regime, placer)] = [(value, evaluations)] over the runs (seeds); split and
    best known value per workload."""
    rows = collections.defaultdict(list)
    split, best = {}, {}
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
            for r in w["results"]:
                if not r.get("feasible", True) or not r.get("value"):
                    continue
                regime, placer = r["placer"].split("/", 1)
                rows[(name, regime, placer)].append((r["value"], r.get("evaluations", 0)))
                best[name] = min(best.get(name, math.inf), r["value"])
    return rows, split, best


def main(paths):
    rows, split, best = load(paths)
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
