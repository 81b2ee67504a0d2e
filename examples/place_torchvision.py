"""Place a torchvision model's step on a preset cluster with dplace and print the comparison.

The graph comes from the model itself (dplace.torch.from_module: torch.fx, shapes from an example
batch); without a profile each op's time is the cluster's roofline estimate from its FLOPs and
bytes. Prints dplace's table, the time it took, and the best plan as accelerate's device map.

    PYTHONPATH=build/release/python python3 examples/place_torchvision.py \
        --model resnet50 --batch 32 --cluster v100x8-nvlink
"""

import argparse
import json
import time

import torch
import torchvision

import dplace
import dplace.torch as dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50", help="a torchvision.models constructor")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--cluster", default="v100x8-nvlink", help="preset, file or dplace-cluster/1")
    ap.add_argument("--inference", action="store_true", help="a forward step (default: training)")
    ap.add_argument("--placers", default="single,m_etf,mcmc")
    ap.add_argument("--time-limit", type=float, default=5.0, help="seconds per search placer")
    args = ap.parse_args()

    model = getattr(torchvision.models, args.model)()
    x = torch.randn(args.batch, 3, 224, 224)
    t0 = time.perf_counter()
    graph = dt.from_module(model, (x,), training=not args.inference)
    t1 = time.perf_counter()
    problem = dplace.Problem(graph, dplace.load_cluster(args.cluster), "step")
    results = dplace.place_all(problem, args.placers.split(","), time_limit=args.time_limit)
    t2 = time.perf_counter()
    step = "inference" if args.inference else "training"
    print(f"{args.model}, batch {args.batch}, {step} step: {graph.num_ops} ops; from_module "
          f"{t1 - t0:.2f} s, placing {t2 - t1:.2f} s")
    print(dplace.table(problem, results))
    best = min(results, key=lambda r: (not r.feasible, r.value))
    print("device_map of", best.placer, json.dumps(dt.device_map(model, best, problem)))


if __name__ == "__main__":
    main()
