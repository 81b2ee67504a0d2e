#!/usr/bin/python3
"""mcmc with options (default: the bandit control, mcmc.control=bandit) against mcmc as it is by
default, side by side per row, seed and budget: the learned suite's same-family graphs that load without a model
folder (the five generated families' held-out seed 3 graphs, the bundled inception_v3, nmt, rnnlm
and wavenet, PipeDream's inception_v3 and nasnetamobile profiles) on k80x4 and v100x8-nvlink.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/mcmc_control.py \
        [--budgets 1000,10000,1s] [--seeds 1,2,3,4,5,6] [--noise] [--opt mcmc.KEY=VALUE ...] \
        [--robust K] [--placer local_search]

Prints per budget the geometric mean of with-options / default over rows and seeds, and how many
pairs are more than 3% apart each way. --noise compares the default with itself at another seed
(seed + 1000) instead: the run-to-run spread that a difference must stand out of. --opt (repeatable)
sets the options of the compared side (e.g. --opt mcmc.guide=learned); none given: the bandit.
--placer: compare that search with options against it without (default mcmc; the options then
name it, e.g. --opt local_search.guide=hand). --robust K: where evaluations are dear, both sides search the worst of K variants of the step
model (--robust-objective worst: each judgement K evaluations) and are compared by it.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import dplace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def graphs(tmp):
    binary = os.environ.get("DPLACE", os.path.join(ROOT, "build", "release", "dplace"))
    out = []
    for family in ("enas_cnn", "enas_rnn", "nmt", "nasnet", "layered"):
        subprocess.run([binary, "gen", family, "--count", "1", "--seed", "3", "--out", tmp],
                       check=True, capture_output=True)
        out.append(os.path.join(tmp, f"{family}_3_0.json"))
    out += [os.path.join(ROOT, "models", f"{m}.onnx")
            for m in ("inception_v3", "nmt", "rnnlm", "wavenet")]
    out += [os.path.join(ROOT, "testdata", "pipedream-profiles", f"{m}.graph.txt")
            for m in ("inception_v3", "nasnetamobile")]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budgets", default="1000,10000,1s")
    ap.add_argument("--seeds", default="1,2,3,4,5,6")
    ap.add_argument("--noise", action="store_true")
    ap.add_argument("--opt", action="append", default=[])
    ap.add_argument("--robust", type=int, default=0)
    ap.add_argument("--placer", default="mcmc")
    a = ap.parse_args()
    budgets = [{"time_limit": float(b[:-1])} if b.endswith("s") else {"evaluations": int(b)}
               for b in a.budgets.split(",")]
    seeds = [int(s) for s in a.seeds.split(",")]
    treated = dict(o.split("=", 1) for o in a.opt) or {"mcmc.control": "bandit"}
    ratios = {str(b): [] for b in budgets}

    def value(problem, **kwargs):
        if not a.robust:
            return dplace.place(problem, a.placer, **kwargs).value
        r = dplace.place_all(problem, [a.placer], robust=a.robust, robust_objective="worst",
                             **kwargs)[0]
        return r.robust["value"]
    with tempfile.TemporaryDirectory() as tmp:
        for path in graphs(tmp):
            graph = dplace.load_graph(path)
            for cluster in ("k80x4", "v100x8-nvlink"):
                problem = dplace.Problem(graph, cluster)
                for b in budgets:
                    for s in seeds:
                        fixed = value(problem, seed=s, **b)
                        other = (value(problem, seed=s + 1000, **b) if a.noise else
                                 value(problem, seed=s, options=treated, **b))
                        ratios[str(b)].append(other / fixed)
    for b, rs in ratios.items():
        g = math.exp(sum(map(math.log, rs)) / len(rs))
        name = "default (other seed)" if a.noise else ",".join(f"{k}={v}" for k, v in treated.items())
        print(f"{b}: {name} / default {g:.4f} over "
              f"{len(rs)} pairs; more than 3% worse {sum(r > 1.03 for r in rs)}, better "
              f"{sum(r < 0.97 for r in rs)}")


if __name__ == "__main__":
    sys.exit(main())
