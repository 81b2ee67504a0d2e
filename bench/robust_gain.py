#!/usr/bin/env python3
"""How much of mcmc's gain over the best classic placer survives other models (docs/fidelity.md).

For each Baechi workload: the classic placers (one-shot baselines of the papers), mcmc on the
simulator, and mcmc minimising the worst of K variants (--robust K --robust-objective worst), each
judged on the base simulator, on the K variants (median, worst) and on Placeto's simulator (one
outgoing bus per device, no latency: simulate --step-model per_device,no_latency). Prints a
Markdown table and the commands it ran.

  python3 bench/robust_gain.py [--dplace build/release/dplace] [--time-limit 20] [--seed 1] [--k 8]

Run it on a quiet machine (no compile beside it): the searches stop on time.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

CLUSTER = "testdata/baechi-check/baechi4.json"
WORKLOADS = [
    ("inception_v3", "testdata/baechi-check/inception_v3_fwd.json"),
    ("GNMT-v2", "testdata/baechi-gnmt/gnmt_v2_fwd.json"),
    ("nasnetamobile", "testdata/baechi-check/nasnetamobile_fwd.json"),
]
CLASSIC = "single,expert,m_topo,heft,m_etf,m_sct,metis,scotch"


def run(cmd, log):
    log.append(" ".join(cmd))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out.stdout


def place(a, graph, placers, plan, log, extra=()):
    cmd = [a.dplace, "place", "--graph", graph, "--cluster", CLUSTER, "--placer", placers,
           "--time-limit", str(a.time_limit), "--seed", str(a.seed), "--robust", str(a.k),
           "--tolerance", "0", "--json", "--out", plan, *extra]
    return json.loads(run(cmd, log))


def placeto(a, graph, plan, log):
    cmd = [a.dplace, "simulate", "--graph", graph, "--cluster", CLUSTER, "--plan", plan,
           "--step-model", "per_device,no_latency", "--json"]
    return json.loads(run(cmd, log))["best"]["value"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dplace", default="build/release/dplace")
    p.add_argument("--time-limit", type=float, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--k", type=int, default=8)
    a = p.parse_args()
    log = []
    tmp = tempfile.mkdtemp()
    ms = lambda s: f"{1000 * s:.1f}"
    rows = []
    for name, graph in WORKLOADS:
        plan = lambda what: os.path.join(tmp, f"{name}_{what}.json")
        classic = place(a, graph, CLASSIC, plan("classic"), log)
        best = classic["best"]  # the written plan: the best by the base value (tolerance 0)
        found = {"classic": best,
                 "mcmc": place(a, graph, "mcmc", plan("mcmc"), log)["best"],
                 "robust": place(a, graph, "mcmc", plan("robust"), log,
                                 ["--robust-objective", "worst"])["best"]}
        pl = {what: placeto(a, graph, plan(what), log) for what in found}
        for what in ("mcmc", "robust"):
            log.append(f"# {name} {what}: {found[what].get('note', '')}")
        c = found["classic"]
        for what, r in found.items():
            kept = kept_placeto = ""
            if what != "classic":
                gain = c["value"] - r["value"]
                kept = f"{100 * (c['robust']['worst'] - r['robust']['worst']) / gain:.0f}%"
                kept_placeto = f"{100 * (pl['classic'] - pl[what]) / gain:.0f}%"
            label = {"classic": f"best classic ({r['placer']})", "mcmc": "mcmc",
                     "robust": f"mcmc --robust {a.k} --robust-objective worst"}[what]
            rows.append([name, label, ms(r["value"]), ms(r["robust"]["median"]),
                         ms(r["robust"]["worst"]), kept, ms(pl[what]), kept_placeto])
    head = ["workload", "placement", "base (ms)", f"median of {a.k}", f"worst of {a.k}",
            "gain kept (worst)", "Placeto-like (ms)", "gain kept (Placeto-like)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print("\ncommands:", file=sys.stderr)
    for line in log:
        print("  " + line, file=sys.stderr)


if __name__ == "__main__":
    main()
