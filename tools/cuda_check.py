#!/usr/bin/python3
"""dplace's counts of the held-out models (python/tests/held_out_models.py) and the memory idioms
(python/tests/test_memory_idioms.py) held against what PyTorch does on a CUDA GPU, in three steps:

    # here, with dplace built: the device maps dplace makes for two GPUs
    PYTHONPATH=build/release/python /usr/bin/python3 tools/cuda_check.py maps MAPS.json
    # on a machine with a CUDA GPU and PyTorch (dplace's core is not needed there)
    python3 tools/cuda_check.py run MAPS.json OUT
    # here again: dplace's figures of the graphs recorded there against PyTorch's counts there
    PYTHONPATH=build/release/python /usr/bin/python3 tools/cuda_check.py compare OUT

`run` records, per model, on the GPU: the aten GEMM/convolution FLOPs of a training step, the bytes
autograd saves with CUDA's own dropout and with the tests' emulation of it (a 1-byte mask), and
dplace.torch's graph of the model recorded from its CUDA run; then runs every device map, gpu0 on
the GPU and gpu1 on the CPU, as accelerate dispatches (a mapped module's inputs moved to its device
at its entry, the batch on the first mapped device), a forward and a backward: a map that splits
what must stay together fails there with PyTorch's own error.
"""
import json
import os
import sys
import traceback
import types
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
warnings.filterwarnings("ignore")
GPU = "cuda:0"


def _maps(out):
    import dplace.torch as dt
    import held_out_models as hm
    maps = {}
    for name in hm.NAMES:
        g = dt.from_module(*hm.build(name)[:2], training=True, unit="module:64")
        for problem, result in hm.split_plans(g):
            first = result.placement[problem.graph.op_names()[0]]
            maps.setdefault(name, []).append(
                {"placer": result.placer, "first": first,
                 "map": dt.device_map(hm.build(name)[0], result, problem)})
    json.dump(maps, open(out, "w"), indent=1)
    print(f"{sum(map(len, maps.values()))} device maps of {len(maps)} models in {out}")


def _without_core():
    """dplace's Python package without its compiled core (dplace.torch's recorder is Python)."""
    core = types.ModuleType("dplace._dplace")
    core.Error = type("Error", (ValueError,), {})
    core.__version__ = "recorder-only"
    core.__getattr__ = lambda name: None
    sys.modules["dplace._dplace"] = core
    sys.path.insert(0, os.path.join(ROOT, "python"))


def _on(device, model, inputs):
    return model.to(device), tuple(x.to(device) for x in inputs)


def _run_map(torch, model, inputs, device_map, first):
    """A forward and a backward with each mapped module on its device (gpu0: cuda:0, gpu1: cpu),
    under accelerate's own hooks where it is installed (dispatch_model's, with the CPU an
    execution device rather than offload), else hooks at the map's modules."""
    where = {0: GPU, 1: "cpu", "cpu": "cpu"}
    try:
        from accelerate.hooks import attach_align_device_hook_on_blocks, remove_hook_from_module
    except ImportError:
        return _run_map_hooked(torch, model, inputs, device_map, first, where)
    devices = {k: torch.device(where[d]) for k, d in device_map.items()}
    for key, device in sorted(devices.items(), key=lambda kv: kv[0].count(".")):
        try:
            target = model if key == "" else model.get_submodule(key)
            target.to(device)
        except AttributeError:
            model.get_parameter(key).data = model.get_parameter(key).data.to(device)
    attach_align_device_hook_on_blocks(model, execution_device=devices,
                                       offload={k: False for k in devices})
    fed = where[0 if first == "gpu0" else 1]
    try:
        error = _step(torch, model, tuple(x.to(fed) for x in inputs))
    finally:
        remove_hook_from_module(model, recurse=True)
    return error or "ran (accelerate's hooks)"


def _step(torch, model, inputs):
    """A forward and a backward of the sum of the floating outputs: None, or where it failed."""
    try:
        out = model(*inputs)
        loss = sum(t.float().sum() for t in torch.utils._pytree.tree_flatten(out)[0]
                   if isinstance(t, torch.Tensor) and t.is_floating_point())
        loss.backward()
        return None
    except Exception as e:  # the error is the finding, and where it was raised
        return _where(e)


def _where(e):
    frame = traceback.extract_tb(e.__traceback__)
    ours = [f for f in frame if "held_out_models" in f.filename] or frame
    return (f"{type(e).__name__}: {str(e).splitlines()[0][:160]} at "
            f"{os.path.basename(ours[-1].filename)}:{ours[-1].lineno} {ours[-1].line}")


def _run_map_hooked(torch, model, inputs, device_map, first, where):

    def move(obj, device):
        return torch.utils._pytree.tree_map(
            lambda t: t.to(device) if isinstance(t, torch.Tensor) else t, obj)

    hooks = []
    for key, d in sorted(device_map.items(), key=lambda kv: kv[0].count(".")):
        device = where[d]
        if key == "":
            model.to(device)
            continue
        parent, _, leaf = key.rpartition(".")
        owner = model.get_submodule(parent) if parent else model
        if leaf in owner._parameters or leaf in owner._buffers:
            table = owner._parameters if leaf in owner._parameters else owner._buffers
            table[leaf].data = table[leaf].data.to(device)
            continue
        module = model.get_submodule(key)
        module.to(device)
        try:
            hooks.append(module.register_forward_pre_hook(
                lambda m, args, kwargs, device=device: (move(args, device), move(kwargs, device)),
                with_kwargs=True))
        except TypeError:  # torch before 2.0: positional inputs only
            hooks.append(module.register_forward_pre_hook(
                lambda m, args, device=device: move(args, device)))
    fed = where[0 if first == "gpu0" else 1]
    try:
        error = _step(torch, model, move(inputs, fed))
    finally:
        for h in hooks:
            h.remove()
    return error or "ran"


def _run(maps_path, out):
    _without_core()
    import torch
    import dplace.torch as dt
    import held_out_models as hm
    import test_memory_idioms as idioms
    global GPU
    GPU = "cuda:0" if torch.cuda.is_available() else "cpu"  # a dry run where there is none
    os.makedirs(out, exist_ok=True)
    report = {"torch": torch.__version__, "models": {},
              "device": torch.cuda.get_device_name(0) if GPU != "cpu" else "no GPU (dry run)"}
    cases = [(n, lambda n=n: hm.build(n)[:2]) for n in hm.NAMES]
    cases += [(f"idiom_{n}", lambda n=n: idioms._build(n)[:2]) for n in sorted(idioms.IDIOMS)]
    for name, build in cases:
        row = {}
        try:
            flops = hm.aten_gemm_flops(*_on(GPU, *build()))
            row["flops"] = flops["forward"] + flops["backward"]
            row["saved_cuda"] = hm.saved_bytes(*_on(GPU, *build()), dropout="cpu")
            row["saved_emulated"] = hm.saved_bytes(*_on(GPU, *build()), dropout="cuda")
            row["params"] = hm.parameter_bytes(build()[0])
            doc = dt.graph_dict(*_on(GPU, *build()))
            json.dump(doc, open(os.path.join(out, f"{name}.json"), "w"))
        except Exception:
            row["error"] = traceback.format_exc(limit=3)
        report["models"][name] = row
        print(name, {k: v for k, v in row.items() if k != "error"}, row.get("error", ""),
              flush=True)
    report["maps"] = {}
    for name, entries in json.load(open(maps_path)).items():
        for entry in entries:
            model, inputs = hm.build(name)[:2]
            result = _run_map(torch, model, inputs, entry["map"], entry["first"])
            report["maps"][f"{name}/{entry['placer']}"] = result
            print(name, entry["placer"], result, flush=True)
    json.dump(report, open(os.path.join(out, "report.json"), "w"), indent=1)


def _compare(out):
    import dplace
    import test_held_out_models as checks
    report = json.load(open(os.path.join(out, "report.json")))
    print(f"PyTorch {report['torch']} on {report['device']}")
    print(f"{'model':28s} {'FLOPs':>6s} {'saved':>6s} {'emul.':>6s} {'params':>6s}")
    for name, row in report["models"].items():
        if "error" in row:
            print(f"{name:28s} failed there: {row['error'].strip().splitlines()[-1]}")
            continue
        doc = json.load(open(os.path.join(out, f"{name}.json")))
        step = dplace.load_graph(os.path.join(out, f"{name}.json"), training=True)
        forward = dplace.load_graph(os.path.join(out, f"{name}.json"))
        flops = checks.gemm_flops(step)
        held = sum(op.get("param_bytes", 0) for op in doc["ops"])
        print(f"{name:28s} {flops / row['flops']:6.3f} "
              f"{forward.saved_activation_bytes / row['saved_cuda']:6.3f} "
              f"{row['saved_emulated'] / row['saved_cuda']:6.3f} {held / row['params']:6.3f}")
    ran = sum(1 for r in report["maps"].values() if r.startswith("ran"))
    print(f"device maps run on cuda:0 + cpu: {ran} of {len(report['maps'])}")
    for key, r in report["maps"].items():
        if not r.startswith("ran"):
            print(f"  {key}: {r}")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "maps":
        _maps(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "run":
        _run(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 3 and sys.argv[1] == "compare":
        _compare(sys.argv[2])
    else:
        sys.exit(__doc__)
