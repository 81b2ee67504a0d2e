#!/usr/bin/env python3
"""The planner's pipeline (schedule, recomputation and replicas chosen with the split) against the
best contiguous 1F1B split that keeps everything, on the user models (docs/pipelines.md, "Replicas
per stage").

Each of python/tests/user_models.py's models (a decoder, an MoE, a two-tower CLIP, a UNet, a CNN,
written as their authors write them) is traced with its training step at `--batch` and split into
`--stages` stages by dp over its blocks (the docs' command), M micro-batches, on the first GPUs of
an a100x8 whose GPUs have the memory given as a share of what the best 1F1B keep-all split's
largest stage needs (`--memory-shares`: below 1 memory binds and that split does not fit). For
each share: dp's 1F1B split keeping everything, and dp with `--schedule auto --recompute auto
--replicas auto`, judged by the pipeline objective (time per micro-batch, simulated); the ratio
is the keep-all split's time (with every GPU of 80 GiB, where memory binds) over the plan's.

  PYTHONPATH=build/release/python:python/tests python3 bench/user_pipelines.py [--batch 64]
      [--stages 4] [--microbatches 8] [--memory-shares 0.6,1.25] [--models decoder,moe,...]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests"))

import dplace  # noqa: E402
import dplace.torch as dt  # noqa: E402
import user_models  # noqa: E402
from schedules import cluster  # noqa: E402  (bench/, this script's directory)



def run(graph, c, stages, m, schedule, recompute, replicas=""):
    problem = dplace.Problem(graph, c, "pipeline", stages=stages, schedule=f"{schedule}:{m}",
                             recompute=recompute, replicas=replicas)
    r = dplace.place(problem, "dp", time_limit=10)
    p = dplace.pipeline(problem, r, schedule, m)
    groups = ",".join(str(len(d.split("+"))) for d in problem.cluster.devices)
    return p, groups


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--memory-shares", default="0.6,1.25")
    ap.add_argument("--models", default=",".join(user_models.NAMES))
    a = ap.parse_args()
    m = a.microbatches
    print("| model | GPU memory (share of keep-all's largest stage) | plan | time per micro-batch (us) | "
          "keep-all (80 GiB) / this | feasible | largest stage peak (MiB) | stages recomputing | "
          "replicas |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in a.models.split(","):
        model, inputs = user_models.build(name, batch=a.batch)
        graph = dt.from_module(model, inputs, training=True, unit="blocks")
        roomy, _ = run(graph, cluster("80GiB"), a.stages, m, "1f1b", "none")
        need = max(s["peak_memory_bytes"] for s in roomy["stages"])
        base = roomy["time_per_microbatch_s"]
        for share in (float(x) for x in a.memory_shares.split(",")):
            c = cluster(f"{int(share * need)}B")
            for label, schedule, recompute, replicas in (
                    ("1f1b, keep all", "1f1b", "none", ""),
                    ("auto, recompute auto, replicas auto", "auto", "auto", "auto")):
                p, groups = run(graph, c, a.stages, m, schedule, recompute, replicas)
                value = p["time_per_microbatch_s"]
                peak = max(s["peak_memory_bytes"] for s in p["stages"]) / 2**20
                recomputing = sum(bool(s.get("recomputes")) for s in p["stages"])
                ratio = f"{base / value:.3f}x" if p["feasible"] else "—"
                print(f"| {name} | {share:.2f} ({share * need / 2**20:.0f} MiB) | {label} ({p['schedule']}) | "
                      f"{1e6 * value:.1f} | {ratio} | {'yes' if p['feasible'] else 'no'} | {peak:.0f} | "
                      f"{recomputing} | {groups} |", flush=True)


if __name__ == "__main__":
    main()
