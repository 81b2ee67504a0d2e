"""What the Python module costs over the command line for the same placement.

Runs the same placement (graph, cluster, placers, seed, evaluation budget) as a `dplace place`
process and as a Python process that imports dplace, loads the problem and places it, alternating,
and prints the median wall time of each and their ratio; also the time of `import dplace` alone
(torch is not imported). The machine is shared: read the ratio, not the absolute times.

    PYTHONPATH=build/release/python python3 bench/python_overhead.py [--repeat 7]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wall(cmd, env):
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", default=os.path.join(ROOT, "models", "resnet50.onnx"))
    parser.add_argument("--cluster", default="v100x8-nvlink")
    parser.add_argument("--placers", default="m_etf,mcmc")
    parser.add_argument("--evaluations", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dplace", default=os.path.join(ROOT, "build", "release", "dplace"))
    args = parser.parse_args()
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", os.path.join(ROOT, "build", "release", "python"))
    cli = [args.dplace, "place", "--graph", args.graph, "--training", "--cluster", args.cluster,
           "--placer", args.placers, "--evaluations", str(args.evaluations), "--seed", "1"]
    code = ("import dplace\n"
            f"p = dplace.load_problem({args.graph!r}, {args.cluster!r}, training=True)\n"
            f"rs = dplace.place_all(p, {args.placers.split(',')!r}, "
            f"evaluations={args.evaluations}, seed=1)\n"
            "print(dplace.table(p, rs))\n")
    python = [sys.executable, "-c", code]
    importing = [sys.executable, "-c",
                 "import time; t = time.perf_counter(); import dplace; "
                 "print(time.perf_counter() - t)"]
    cli_s, py_s, import_s = [], [], []
    for _ in range(args.repeat):
        cli_s.append(wall(cli, env))
        py_s.append(wall(python, env))
        out = subprocess.run(importing, check=True, capture_output=True, text=True, env=env)
        import_s.append(float(out.stdout))
    c, p = statistics.median(cli_s), statistics.median(py_s)
    print(f"same placement ({os.path.basename(args.graph)} training, {args.cluster}, "
          f"{args.placers}, {args.evaluations} evaluations), median of {args.repeat}:")
    print(f"  dplace place:   {c:.3f} s")
    print(f"  python dplace:  {p:.3f} s   ({100 * (p / c - 1):+.1f}% over the CLI)")
    print(f"  import dplace:  {statistics.median(import_s):.3f} s (in process)")


if __name__ == "__main__":
    main()
