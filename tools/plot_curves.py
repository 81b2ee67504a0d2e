#!/usr/bin/env python3
"""Plots learning curves (dplace train --log, CSV) as one SVG: mean episode return per update,
smoothed over a window, one line per file.
  python3 tools/plot_curves.py OUT.svg LABEL=CURVE.csv [LABEL=CURVE.csv ...]"""
import csv
import sys

W, H, PAD = 640, 360, 50
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def read(path, window=10):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    x = [int(r["update"]) for r in rows]
    y = [float(r["mean_return"]) for r in rows]
    smooth = [sum(y[max(0, i - window + 1):i + 1]) / len(y[max(0, i - window + 1):i + 1])
              for i in range(len(y))]
    return x, smooth


def main():
    out, specs = sys.argv[1], sys.argv[2:]
    curves = [(s.split("=", 1)[0], read(s.split("=", 1)[1])) for s in specs]
    xs = [x for _, (xv, _) in curves for x in xv]
    ys = [y for _, (_, yv) in curves for y in yv]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    y0, y1 = y0 - 0.05 * (y1 - y0 or 1), y1 + 0.05 * (y1 - y0 or 1)
    sx = lambda x: PAD + (x - x0) / ((x1 - x0) or 1) * (W - 2 * PAD)
    sy = lambda y: H - PAD - (y - y0) / ((y1 - y0) or 1) * (H - 2 * PAD)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{W}" height="{H}" fill="white"/>',
             f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="black"/>',
             f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{H - PAD}" stroke="black"/>',
             f'<text x="{W / 2}" y="{H - 12}" text-anchor="middle">update</text>',
             f'<text x="14" y="{H / 2}" transform="rotate(-90 14 {H / 2})" '
             f'text-anchor="middle">mean episode return (smoothed)</text>']
    for v in (y0, (y0 + y1) / 2, y1):
        parts.append(f'<text x="{PAD - 4}" y="{sy(v) + 4}" text-anchor="end">{v:.3f}</text>')
    for v in (x0, x1):
        parts.append(f'<text x="{sx(v)}" y="{H - PAD + 16}" text-anchor="middle">{v}</text>')
    if y0 < 0 < y1:
        parts.append(f'<line x1="{PAD}" y1="{sy(0)}" x2="{W - PAD}" y2="{sy(0)}" '
                     f'stroke="#aaa" stroke-dasharray="4"/>')
    for i, (label, (xv, yv)) in enumerate(curves):
        colour = COLOURS[i % len(COLOURS)]
        points = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(xv, yv))
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}"/>')
        parts.append(f'<text x="{W - PAD - 4}" y="{PAD + 16 * (i + 1)}" text-anchor="end" '
                     f'fill="{colour}">{label}</text>')
    parts.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(parts) + "\n")


if __name__ == "__main__":
    main()
