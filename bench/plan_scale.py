#!/usr/bin/env python3
"""How long `dplace plan` takes, from one node to 3,072 GPUs (the issue's targets: <= 1 s for one
node, <= 10 s for 3,072 GPUs and a 1-trillion-parameter model, on 2 cores).

  python3 bench/plan_scale.py [--dplace build/release/dplace]

Prints, per case: wall seconds of the whole command (start-up included), the search's own
seconds, configurations searched, plans judged and the plan found.
"""
import argparse
import json
import pathlib
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
CASES = [
    ("Llama-3-8B, one DGX H100", "models/configs/llama3-8b.json", "dgx-h100", 128, 4096),
    ("Llama-3-8B, 2 DGX H100", "models/configs/llama3-8b.json", "dgx-h100:2", 256, 4096),
    ("Llama-3-70B, 8 DGX H100", "models/configs/llama3-70b.json", "dgx-h100:8", 512, 4096),
    ("GPT 1T, 384 DGX A100 (3,072 GPUs)", "testdata/configs/gpt-1t.json", "dgx-a100:384", 3072,
     2048),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dplace", default=str(ROOT / "build/release/dplace"))
    args = ap.parse_args()
    print(f"{'case':38} {'wall s':>7} {'search s':>9} {'configs':>8} {'judged':>7} {'unproved':>8}  plan")
    for name, model, cluster, batch, seq in CASES:
        began = time.monotonic()
        out = subprocess.run([args.dplace, "plan", "--model", str(ROOT / model), "--cluster",
                              cluster, "--global-batch", str(batch), "--seq-len", str(seq),
                              "--json"], check=True, capture_output=True, text=True).stdout
        wall = time.monotonic() - began
        r = json.loads(out)
        c = r["best"]["config"]
        plan = (f"tp{c['tp']} pp{c['pp']} dp{c['dp']} zero{c['zero']} mbs{c['micro_batch']} "
                f"{c['schedule']}" + (f":{c['virtual_stages']}" if c["virtual_stages"] > 1 else ""))
        s = r["search"]
        print(f"{name:38} {wall:7.2f} {s['seconds']:9.3f} {s['configurations']:8} "
              f"{s['plans_judged']:7} {s['unproved_configurations']:8}  {plan}")


if __name__ == "__main__":
    main()
