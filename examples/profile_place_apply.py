"""Profile a model on this CPU, place it with dplace, run the plan for real and compare.

Steps: measured op times (dplace.torch.profile, a training step), the graph with those times
(from_module), this machine as a two-device cluster (local_cluster("cpu+cpu"): two CPU devices
on the same cores, joined by a link of measured copy speed), a placement (m_etf), the placed
model (apply: each op on its device, each crossing tensor copied), the placed model's outputs
against the unplaced model's, and its measured step against the prediction.

    PYTHONPATH=build/release/python python3 examples/profile_place_apply.py --batch 4
"""

import argparse
import copy
import time

import torch
import torchvision

import dplace
import dplace.torch as dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--size", type=int, default=64, help="image side")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch.set_num_threads (1: stable timings on a shared machine)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    model = torchvision.models.resnet18()
    x = torch.randn(args.batch, 3, args.size, args.size)
    t0 = time.perf_counter()
    prof = dt.profile(model, (x,), training=True, repeat=args.repeat)
    print(f"profile: {prof} in {time.perf_counter() - t0:.1f} s")

    graph = dt.from_module(model, (x,), training=True, profile=prof)
    cluster = dplace.load_cluster(dt.local_cluster("cpu+cpu"))
    problem = dplace.Problem(graph, cluster, "step")
    result = dplace.place(problem, "m_etf")
    on_cpu1 = sum(d == "cpu1" for d in result.placement.values())
    print(f"m_etf: {on_cpu1} of {graph.num_ops} ops on cpu1, predicted step "
          f"{result.value * 1e3:.1f} ms")

    placed = dt.apply(copy.deepcopy(model), result, cluster=cluster, emulate_transfers=True)
    model.eval(), placed.eval()
    with torch.no_grad():
        same = torch.equal(placed(x), model(x))
    print(f"placed outputs equal the unplaced model's: {same}")

    measured = dt.measure(model, (x,), plan=result, cluster=cluster, training=True,
                          emulate_transfers=True, repeat=args.repeat)
    print(f"measured step {measured * 1e3:.1f} ms, predicted {result.value * 1e3:.1f} ms "
          f"(predicted/measured {result.value / measured:.3f})")


if __name__ == "__main__":
    main()
