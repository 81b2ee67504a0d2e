#!/usr/bin/env python3
"""What each part of mcmc buys when every evaluation is a measured step (docs/learned.md,
"Measured steps"): mcmc plain, with the bandit's control (mcmc.control=bandit) and guided by the
hand-set and the learned move scorer (mcmc.guide=hand, guide=learned), each searching by
dplace.torch.measure of the model placed as it proposes (place_all's measure=), at a budget of
measured evaluations; every result measured again REPEAT times, interleaved, and compared as the
median of those.

On a machine without GPUs the model's devices are two CPU "devices" on one torch device: each
tensor that crosses is copied (emulate_transfers), so what a placement changes in a measured step
is its copies and where PyTorch's allocator finds memory, not its parallelism: a landscape with
little to find. With GPUs, --cluster cpu+gpu puts the CPU and each GPU torch sees in the cluster.

  PYTHONPATH=build/release/python python3 bench/measured_parts.py [--models clip,cnn]
      [--evaluations 60] [--seeds 1,2,3] [--cluster cpu+cpu|cpu+gpu] [--repeat 7]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests"))

import dplace  # noqa: E402
import dplace.torch as dt  # noqa: E402
import user_models  # noqa: E402

PARTS = [("plain", {}), ("bandit", {"mcmc.control": "bandit"}), ("guide hand", {"mcmc.guide": "hand"}),
         ("guide learned", {"mcmc.guide": "learned"})]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="clip,cnn")
    ap.add_argument("--evaluations", type=int, default=60)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--cluster", default="cpu+cpu", choices=["cpu+cpu", "cpu+gpu"])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--batch", type=int, default=8)
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    emulate = a.cluster == "cpu+cpu"
    print("| model | part | measured step, median over seeds (ms) | / plain (geomean) | / plain per seed |"
          " evaluations | search s |")
    print("|---|---|---|---|---|---|---|")
    for name in a.models.split(","):
        model, inputs = user_models.build(name, a.batch)
        cluster = dt.local_cluster("cpu+cpu" if emulate else "cpu+gpu")
        if emulate:
            profile = dt.profile(model, inputs, training=True)
        else:
            profile = [dt.profile(model, inputs, training=True, device=d) for d in ("cpu", "cuda")]
        problem = dplace.load_problem(dt.from_module(model, inputs, training=True, profile=profile),
                                      cluster)

        def measure(plan, repeat=3):
            return dt.measure(model, inputs, plan=plan, cluster=cluster, training=True,
                              emulate_transfers=emulate, warmup=1, repeat=repeat)

        results = {}
        for part, options in PARTS:
            for seed in seeds:
                start = time.perf_counter()
                r = dplace.place(problem, "mcmc", evaluations=a.evaluations, seed=seed,
                                 options=options, measure=measure)
                results[(part, seed)] = (r, time.perf_counter() - start)
        # Every result measured again, interleaved, so that drift hits every part alike.
        again = {k: [] for k in results}
        for _ in range(a.repeat):
            for k, (r, _) in results.items():
                again[k].append(measure(r.placement, repeat=5))
        plain = {s: statistics.median(again[("plain", s)]) for s in seeds}
        for part, _ in PARTS:
            values = [statistics.median(again[(part, s)]) for s in seeds]
            ratios = [v / plain[s] for v, s in zip(values, seeds)]
            ratio = statistics.geometric_mean(ratios)
            evals = statistics.mean(results[(part, s)][0].evaluations for s in seeds)
            secs = statistics.mean(results[(part, s)][1] for s in seeds)
            print(f"| {name} | {part} | {1e3 * statistics.median(values):.2f} | {ratio:.4f} | "
                  f"{' '.join(f'{x:.3f}' for x in ratios)} | "
                  f"{evals:.0f} | {secs:.1f} |", flush=True)


if __name__ == "__main__":
    main()
