#!/usr/bin/env python3
"""Learning curves of the learned suite's ladder regime (docs/learned.md).

Reads the JSON of `dplace bench --suite learned --regimes curve --json` (regimes curve@E: each
placer run afresh with a limit of E evaluations) and writes
  - one SVG per workload: value / reference value against evaluations (log scale), every placer;
  - a table (stdout, markdown): per workload and pair (A, B), the evaluations A needs to reach B's
    final value (B's value at the largest rung) against those B needs, and their ratio.
Usage: curves.py BENCH.json OUT_DIR [A:B ...]   (default pairs: gdp:hdp placeto:colocrl)
"""
import json
import math
import os
import sys

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]


def curves(workload):
    """{placer: [(evaluations limit, ratio)]} for the workload's ladder rows."""
    out = {}
    for r in workload["results"]:
        regime = r.get("regime", "")
        if "@" not in regime or not r.get("feasible", True):
            continue
        placer = r["placer"].split("/", 1)[1]
        out.setdefault(placer, []).append((int(regime.split("@")[1]), r["ratio"]))
    for v in out.values():
        v.sort()
    return out


def reach(curve, value):
    """The smallest rung whose value is at most `value` (1e-9 relative), or None."""
    for evaluations, ratio in curve:
        if ratio <= value * (1 + 1e-9):
            return evaluations
    return None


def svg(name, data):
    w, h, left, bottom = 520, 320, 60, 40
    xs = [e for c in data.values() for e, _ in c]
    ys = [r for c in data.values() for _, r in c]
    if not xs:
        return ""
    x0, x1 = math.log2(min(xs)), math.log2(max(xs))
    y0, y1 = min(ys + [1.0]), max(ys)
    y1 = y1 if y1 > y0 else y0 + 0.01
    sx = lambda e: left + (math.log2(e) - x0) / max(x1 - x0, 1e-9) * (w - left - 20)
    sy = lambda r: h - bottom - (r - y0) / (y1 - y0) * (h - bottom - 30)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'font-family="sans-serif" font-size="11">',
             f'<text x="{w / 2}" y="14" text-anchor="middle">{name}</text>',
             f'<line x1="{left}" y1="{h - bottom}" x2="{w - 20}" y2="{h - bottom}" stroke="black"/>',
             f'<line x1="{left}" y1="30" x2="{left}" y2="{h - bottom}" stroke="black"/>',
             f'<text x="{w / 2}" y="{h - 8}" text-anchor="middle">evaluations (limit)</text>',
             f'<text x="12" y="{h / 2}" transform="rotate(-90 12 {h / 2})" '
             f'text-anchor="middle">value / mcmc 10 s</text>']
    for e in sorted(set(xs)):
        parts.append(f'<text x="{sx(e):.1f}" y="{h - bottom + 14}" text-anchor="middle">{e}</text>')
    for i in range(5):
        r = y0 + (y1 - y0) * i / 4
        parts.append(f'<text x="{left - 4}" y="{sy(r) + 4:.1f}" text-anchor="end">{r:.2f}</text>')
    if y0 <= 1.0 <= y1:
        parts.append(f'<line x1="{left}" y1="{sy(1):.1f}" x2="{w - 20}" y2="{sy(1):.1f}" '
                     'stroke="#999" stroke-dasharray="4 3"/>')
    for i, (placer, c) in enumerate(sorted(data.items())):
        colour = COLOURS[i % len(COLOURS)]
        points = " ".join(f"{sx(e):.1f},{sy(r):.1f}" for e, r in c)
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{w - 110}" y="{40 + 14 * i}" fill="{colour}">{placer}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    bench = json.load(open(sys.argv[1]))
    out_dir = sys.argv[2]
    pairs = [p.split(":") for p in (sys.argv[3:] or ["gdp:hdp", "placeto:colocrl"])]
    os.makedirs(out_dir, exist_ok=True)
    print("| workload | A | B | B's final R | B reaches it at | A reaches it at | B / A |")
    print("|---|---|---|---|---|---|---|")
    for w in bench["workloads"]:
        data = curves(w)
        if not data:
            continue
        safe = w["workload"].replace("@", "_at_").replace("/", "_")
        with open(os.path.join(out_dir, f"curve_{safe}.svg"), "w") as f:
            f.write(svg(w["workload"], data))
        for a, b in pairs:
            if a not in data or b not in data:
                continue
            final = data[b][-1][1]
            eb, ea = reach(data[b], final), reach(data[a], final)
            ratio = f"{eb / ea:.1f}" if ea else "never"
            print(f"| {w['workload']} | {a} | {b} | {final:.3f} | {eb} | {ea or '-'} | {ratio} |")


if __name__ == "__main__":
    main()
