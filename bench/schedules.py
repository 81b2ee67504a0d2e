#!/usr/bin/env python3
"""Pipelines planned with their schedule and recomputation against the best contiguous 1F1B split
that keeps everything (docs/pipelines.md, "Schedules and recomputation, measured").

A decoder written as its authors write it (tests/user_models.py's Decoder: RMSNorm, rotary
attention, SwiGLU), scaled up and traced on the meta device (no memory, no arithmetic), its
training step placed over the first 4 GPUs of an A100 machine whose GPUs have 24 GiB, M
micro-batches. At each micro-batch size and for each unit (ops, or each block one unit: --unit
blocks), dp's split under 1F1B with everything kept, then dp's plan with `schedule` (interleaved:
two chunks a GPU) and `recompute` as given, each judged by the pipeline objective (time per
micro-batch, simulated) and every stage's peak memory, against the best 1F1B split that keeps
everything over both units. The replicas rows run a stage on several GPUs (data parallel within
the stage): two each, or as dp chooses them (Piper's DP over stages and degrees); their column
gives each stage's replicas.

  PYTHONPATH=build/release/python:python/tests python3 bench/schedules.py [--layers 12]
      [--d 2048] [--heads 16] [--seq 2048] [--batches 1,2,4,8] [--microbatches 8]
      [--units op,blocks] [--plans 1f1b,replicas-2,replicas-auto]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests"))

import torch  # noqa: E402

import dplace  # noqa: E402
import dplace.torch as dt  # noqa: E402
import user_models  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# (key, label, schedule, recompute, replicas): replicas N runs stages / N stages of N GPUs each.
PLANS = [("1f1b", "1f1b, keep all", "1f1b", "none", ""),
         ("interleaved", "interleaved, 2 chunks", "interleaved:2", "none", ""),
         ("zb-h1", "zb-h1", "zb-h1", "none", ""), ("zb-h2", "zb-h2", "zb-h2", "none", ""),
         ("selective", "1f1b, recompute selective", "1f1b", "selective", ""),
         ("auto", "auto, recompute auto", "auto", "auto", ""),
         ("replicas-2", "1f1b, keep all, 2 replicas a stage", "1f1b", "none", "2"),
         ("replicas-auto", "auto, recompute auto, replicas auto", "auto", "auto", "auto")]


def cluster(memory):
    """The a100x8 preset with GPUs of `memory` ("24GiB", "123456B")."""
    doc = json.load(open(os.path.join(ROOT, "clusters", "a100x8.json")))
    for d in doc["devices"]:
        if d["kind"] == "gpu":
            d["memory"] = memory
    doc["name"] = f"a100x8-{memory}"
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--d", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--batches", default="1,2,4,8")
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--memory-gib", type=int, default=24)
    ap.add_argument("--time-limit", type=float, default=20)
    ap.add_argument("--units", default="op,blocks",
                    help="what dp moves, each in turn: op, or blocks (the docs' command)")
    ap.add_argument("--plans", default=",".join(p[0] for p in PLANS),
                    help="the plans to run (1f1b, the baseline, always runs): "
                    + ", ".join(p[0] for p in PLANS))
    a = ap.parse_args()
    plans = [p for p in PLANS if p[0] == "1f1b" or p[0] in a.plans.split(",")]
    c = cluster(f"{a.memory_gib}GiB")
    print("| micro-batch | unit | plan | time per micro-batch (ms) | best 1F1B keep-all / this | "
          "feasible | largest stage peak (GiB) | stages recomputing | replicas | dp s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for batch in (int(b) for b in a.batches.split(",")):
        rows, base = [], None
        for unit in a.units.split(","):
            torch.manual_seed(0)
            model = user_models.Decoder(vocab=a.vocab, d=a.d, heads=a.heads, layers=a.layers,
                                        seq=a.seq).to("meta")
            tokens = torch.empty((batch, a.seq), dtype=torch.long, device="meta")
            graph = dt.from_module(model, (tokens,), training=True,
                                   **({} if unit == "op" else {"unit": unit}))
            for _, label, schedule, recompute, replicas in plans:
                # Replicas "auto": dp chooses them as the problem is made (its devices the groups).
                stages = a.stages // int(replicas) if replicas.isdigit() else a.stages
                start = time.perf_counter()
                problem = dplace.Problem(graph, c, "pipeline", stages=stages,
                                         schedule=f"{schedule}:{a.microbatches}",
                                         recompute=recompute, replicas=replicas)
                r = dplace.place(problem, "dp", time_limit=a.time_limit)
                secs = time.perf_counter() - start
                run = dplace.pipeline(problem, r, schedule.split(":")[0], a.microbatches)
                if label == PLANS[0][1] and run["feasible"]:
                    base = min(base or run["time_per_microbatch_s"], run["time_per_microbatch_s"])
                groups = ",".join(str(len(d.split("+"))) for d in problem.cluster.devices)
                rows.append((unit, label, run, secs, groups))
        # Against the best 1F1B split that keeps everything, over both units.
        for unit, label, run, secs, groups in rows:
            value = run["time_per_microbatch_s"]
            ratio = f"{base / value:.3f}x" if base and run["feasible"] else "—"
            peak = max(s["peak_memory_bytes"] for s in run["stages"]) / 2**30
            recomputing = sum(bool(s.get("recomputes")) for s in run["stages"])
            print(f"| {batch} | {unit} | {label} ({run['schedule']}) | {1e3 * value:.2f} | {ratio} | "
                  f"{'yes' if run['feasible'] else 'no'} | {peak:.1f} | {recomputing} | {groups} | "
                  f"{secs:.1f} |",
                  flush=True)

if __name__ == "__main__":
    main()
