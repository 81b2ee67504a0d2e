"""Predicted against measured step times on this machine (dplace.torch.check), per model and mode.

For each batch size: the model is profiled on this CPU (op times in context), the core simulates
the step on a one-device cluster of this machine (local_cluster("cpu")), and real steps are timed;
the table gives both and their ratio, whole step and per device. --ranking adds three placements
on two CPU devices (local_cluster("cpu+cpu")): everything on cpu0, the forward ops split in two
halves in graph order, and ops alternating between the devices, to compare the ranking the
simulator predicts with the measured one. "others" is the CPU (in cores) that other processes
used while a configuration ran: timings with 2 torch threads on 2 cores taken beside other work
are not the machine's (docs/fidelity.md).

    PYTHONPATH=build/release/python \
        python3 examples/check_fidelity.py resnet50 --batch 1 8 32 --training --repeat 6
"""

import argparse
import json
import os
import time

import torch
import torchvision

import dplace.torch as dt


class LSTMModel(torch.nn.Module):
    """2-layer LSTM (hidden 1024) and a linear head, on (seq, batch, 1024) inputs."""

    def __init__(self, width=1024, layers=2):
        super().__init__()
        self.lstm = torch.nn.LSTM(width, width, layers)
        self.head = torch.nn.Linear(width, width)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.head(out)


def build(name, batch):
    """(model, example inputs) of a named model at a batch size."""
    torch.manual_seed(0)
    if name in ("resnet50", "mobilenet_v2", "resnet18"):
        return getattr(torchvision.models, name)(), (torch.randn(batch, 3, 224, 224),)
    if name == "transformer":  # 6 layers, d_model 512, 8 heads, sequence 64 (seq, batch, d)
        layer = torch.nn.TransformerEncoderLayer(512, 8, 2048)
        return torch.nn.TransformerEncoder(layer, 6), (torch.randn(64, batch, 512),)
    if name == "lstm":  # sequence 32
        return LSTMModel(), (torch.randn(32, batch, 1024),)
    if name == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                    torch.nn.Linear(512, 10))
        return model, (torch.randn(batch, 256),)
    raise SystemExit(f"unknown model {name}: resnet50, mobilenet_v2, transformer, lstm, mlp")


def _busy_s():
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def others_cores(fn):
    """fn()'s value and the CPU (cores) other processes used meanwhile."""
    busy0, own0, t0 = _busy_s(), sum(os.times()[:2]), time.perf_counter()
    value = fn()
    wall = time.perf_counter() - t0
    others = (_busy_s() - busy0) - (sum(os.times()[:2]) - own0)
    return value, max(0.0, others / wall)


def ranking_placements(model, inputs):
    """Three plans on cpu0/cpu1 over the forward ops (check() adds their grad/update ops)."""
    ops = [o["name"] for o in dt.graph_dict(model, inputs)["ops"]]
    half = len(ops) // 2
    return {
        "cpu0 only": {op: "cpu0" for op in ops},
        "halves": {op: "cpu0" if i < half else "cpu1" for i, op in enumerate(ops)},
        "alternate": {op: f"cpu{i % 2}" for i, op in enumerate(ops)},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="resnet50, mobilenet_v2, transformer, lstm or mlp")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--training", action="store_true", help="training steps (default inference)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch.set_num_threads (1: see docs/fidelity.md on 2 threads in a VM)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--ranking", action="store_true", help="three placements on cpu+cpu")
    ap.add_argument("--json", help="append one JSON line per configuration to this file")
    ap.add_argument("--glibc-malloc", action="store_true",
                    help="leave glibc's malloc as it is (default: keep_freed_memory())")
    args = ap.parse_args()
    kept = False if args.glibc_malloc else dt.keep_freed_memory()
    torch.set_num_threads(args.threads)
    mode = "training" if args.training else "inference"
    cluster = dt.local_cluster("cpu+cpu" if args.ranking else "cpu")
    for batch in args.batch:
        model, inputs = build(args.model, batch)
        placements = ranking_placements(model, inputs) if args.ranking else None
        t0 = time.perf_counter()
        check, others = others_cores(lambda: dt.check(
            model, inputs, cluster, args.training, placements, args.warmup, args.repeat))
        took = time.perf_counter() - t0
        print(f"\n{args.model}, batch {batch}, {mode}, {args.threads} threads, "
              f"{'freed memory kept' if kept else 'glibc malloc'} ({took:.0f} s, "
              f"others {others:.2f} cores)")
        print(check)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps({"model": args.model, "batch": batch, "mode": mode,
                                    "threads": args.threads, "kept_memory": kept,
                                    "others_cores": others,
                                    "seconds": took, "rows": check.rows}) + "\n")


if __name__ == "__main__":
    main()
