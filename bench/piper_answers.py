#!/usr/bin/env python3
"""Piper's DP (`dplace plan` on Piper's inputs) against the answers of Piper's own program.

  python3 bench/piper_answers.py [--dplace build/release/dplace] [--quick]

Runs `dplace plan --model testdata/piper/FILE --gpus K --gpu-memory M --json` on the file's
bandwidth and micro-batches and prints, per configuration: the time per sample found, the one
Piper's program (msr-fiddle/piper algo.cpp @ d7fc8cf, its single() run with these devices and
memory) found on the same inputs, whether the two agree to the nine digits it prints, and the
search's seconds beside the CPU seconds Piper's program took on the same machine (docs/planning.md,
"Piper's inputs", says how it was run; its code is not part of this repository). --quick leaves
out the two GNMT cases (20-40 s each).
"""
import argparse
import json
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]
GIB = 1 << 30
# (file, devices, memory GiB, Piper's program's time per sample, its CPU seconds (clock())).
CASES = [
    ("bert32a100.json", 8, 8, 0.166904267, 0.035),
    ("bert32a100.json", 32, 8, 0.0417813782, 0.096),
    ("bert32a100.json", 64, 8, 0.0203202247, 0.160),
    ("bert32a100.json", 512, 8, 0.00257874621, 2.23),
    ("bert32a100.json", 1024, 8, 0.00131350816, 11.05),
    ("bert32a100.json", 2048, 8, 0.000719570234, 42.7),
    ("resnet.json", 4, 8, 129.263104, 1.39),
    ("gnmt.json", 4, 2.5, 131.677403, 191.3),
    ("gnmt.json", 8, 2.5, 65.838913, 255.7),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dplace", default=str(ROOT / "build/release/dplace"))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    print(f"{'input':18} {'devices':>7} {'memory':>7} {'dplace':>14} {'Piper':>14} {'same':>5} "
          f"{'dplace s':>9} {'Piper s':>8} {'ratio':>6}")
    agree = 0
    cases = [c for c in CASES if not (args.quick and c[0] == "gnmt.json")]
    for file, devices, gib, piper, piper_s in cases:
        out = subprocess.run(
            [args.dplace, "plan", "--model", str(ROOT / "testdata/piper" / file), "--gpus",
             str(devices), "--gpu-memory", f"{gib}GiB", "--json"],
            check=True, capture_output=True, text=True).stdout
        r = json.loads(out)
        tps = r["best"]["predicted"]["time_per_sample"]
        seconds = r["search"]["seconds"]
        same = f"{tps:.9g}" == f"{piper:.9g}"
        agree += same
        print(f"{file:18} {devices:7} {gib:6}G {tps:14.9g} {piper:14.9g} {'yes' if same else 'NO':>5} "
              f"{seconds:9.3f} {piper_s:8.2f} {seconds / piper_s:6.2f}")
    print(f"{agree} of {len(cases)} equal to Piper's program's answer")
    return 0 if agree == len(cases) else 1


if __name__ == "__main__":
    raise SystemExit(main())
