#!/usr/bin/python3
"""Prints dplace's figures for the five held-out models of python/tests/held_out_models.py against
PyTorch's own counts, the table docs/onnx.md and docs/pipelines.md quote:

    PYTHONPATH=build/release/python /usr/bin/python3 tools/held_out_counts.py

Per model: the training step's GEMM and convolution FLOPs over PyTorch's aten count (ONNX exported
with folding off and on, and dplace.torch), the bytes kept for backward over what autograd saves
(dropout as a GPU keeps it), then the range of 1F1B stage peaks over PyTorch's per-stage count for
the frameworks' splits in two stages (test_held_out_models.py holds the bounds).
"""
import os
import sys
import tempfile
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
warnings.filterwarnings("ignore")

import dplace  # noqa: E402
import dplace.torch as dt  # noqa: E402
import held_out_models as hm  # noqa: E402
import test_held_out_models as checks  # noqa: E402


def main():
    import json
    folder = tempfile.mkdtemp()
    exports = {}
    print(f"{'model':13s} {'FLOPs: kept':>11s} {'folded':>7s} {'torch':>6s}  "
          f"{'saved: kept':>11s} {'folded':>7s} {'torch':>6s}")
    for name in hm.NAMES:
        flops = hm.aten_gemm_flops(*hm.build(name)[:2])
        flops = flops["forward"] + flops["backward"]
        saved = hm.saved_bytes(*hm.build(name)[:2])
        row_flops, row_saved = [], []
        for fold in (False, True):
            model, inputs, names = hm.build(name)
            path = os.path.join(folder, f"{name}_{fold}.onnx")
            exports[name, fold] = hm.export_onnx(model, inputs, names, path, fold, hm.OPSET[name])
            row_flops.append(checks.gemm_flops(dplace.load_graph(path, training=True)) / flops)
            row_saved.append(dplace.load_graph(path).saved_activation_bytes / saved)
        step = dt.from_module(*hm.build(name)[:2], training=True)
        row_flops.append(checks.gemm_flops(step) / flops)
        row_saved.append(step.saved_activation_bytes / saved)
        print(f"{name:13s} {row_flops[0]:11.3f} {row_flops[1]:7.3f} {row_flops[2]:6.3f}  "
              f"{row_saved[0]:11.3f} {row_saved[1]:7.3f} {row_saved[2]:6.3f}")
    ratios = []
    for name in hm.NAMES:
        for recipe in ("onnx", "torch"):
            problem = dplace.Problem(checks.graph_of(name, recipe, exports, unit="module:3"),
                                     "a100x8", "pipeline", stages=2)
            for result in dplace.place_all(problem, ["uniform", "parameters", "blocks"]):
                path = os.path.join(folder, "stages.json")
                dplace.write_stages(path, problem, result)
                stages = json.load(open(path))
                ours = [s["peak_memory_bytes"]
                        for s in dplace.pipeline(problem, result, "1f1b", 8)["stages"]]
                theirs = checks.stage_memory_by_pytorch(*hm.build(name)[:2],
                                                        stages["split_modules"], len(ours))
                ratios += [(b / sum(theirs), a / b) for a, b in zip(ours, theirs)]
    big = [r for share, r in ratios if share > 0.25]
    print(f"1F1B stage peaks / PyTorch: {min(big):.2f}-{max(big):.2f} on the {len(big)} stages "
          f"holding over a quarter of the step; {min(r for _, r in ratios):.2f}-"
          f"{max(r for _, r in ratios):.2f} on all {len(ratios)}")


if __name__ == "__main__":
    main()
