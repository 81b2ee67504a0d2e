#!/usr/bin/python3
"""Learns the bandit control's prior offline (mcmc.control_prior): runs mcmc under the bandit
(mcmc.control=bandit, its fixed-share prior) on graph 0 of the five generated families at the
training seeds 0, 1 and 2, on k80x4 and v100x8-nvlink, and averages the shares the bandit ended
with (the leader chain's, from mcmc's note) per family and over all of them. Never seed 3 or the
bundled models, on which the prior is measured (bench/mcmc_control.py).

    PYTHONPATH=build/release/python /usr/bin/python3 bench/control_prior.py [--evaluations 10000]

Prints each family's mean shares and the overall mean as the option to pass:
--opt mcmc.control_prior=K1,...,K6,H1,H2,H3 (the kinds (critical, any) x (scope, run, alone),
then the temperatures 0.1, 1, 10 times the schedule's).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import dplace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAMILIES = ("enas_cnn", "enas_rnn", "nmt", "nasnet", "layered")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--evaluations", type=int, default=10000)
    a = ap.parse_args()
    binary = os.environ.get("DPLACE", os.path.join(ROOT, "build", "release", "dplace"))
    per_family = {}
    with tempfile.TemporaryDirectory() as tmp:
        for family in FAMILIES:
            for seed in (0, 1, 2):
                subprocess.run([binary, "gen", family, "--count", "1", "--seed", str(seed),
                                "--out", tmp], check=True, capture_output=True)
                graph = dplace.load_graph(os.path.join(tmp, f"{family}_{seed}_0.json"))
                for cluster in ("k80x4", "v100x8-nvlink"):
                    r = dplace.place(dplace.Problem(graph, cluster), "mcmc", seed=1,
                                     evaluations=a.evaluations,
                                     options={"mcmc.control": "bandit"})
                    found = re.search(r"control shares ([0-9.e,+-]+)", r.note)
                    if not found:
                        sys.exit(f"no control shares in mcmc's note: {r.note}")
                    shares = [float(v) for v in found.group(1).split(",")]
                    per_family.setdefault(family, []).append(shares)
    means = {}
    for family, rows in per_family.items():
        means[family] = [sum(col) / len(rows) for col in zip(*rows)]
        print(f"{family:9s} " + " ".join(f"{v:.3f}" for v in means[family]))
    overall = [sum(col) / len(means) for col in zip(*means.values())]
    print("all       " + " ".join(f"{v:.3f}" for v in overall))
    print("--opt mcmc.control_prior=" + ",".join(f"{v:.3f}" for v in overall))


if __name__ == "__main__":
    sys.exit(main())
