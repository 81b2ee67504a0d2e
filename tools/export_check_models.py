#!/usr/bin/python3
"""Exports the models of tools/torch_models.py to ONNX without weights, with their state_dict keys,
module names and parameter sizes, for the importer's and the device-map checks' tests.

Run with Debian's Python and packages (python3-torch, python3-torchvision, python3-onnx):

    /usr/bin/python3 tools/export_check_models.py testdata/torch/

For each model NAME it writes NAME.onnx (opset 13, export_params=False, so every parameter is a
graph input named by its state_dict key; node names carry the module scopes, as in
`/layer1/layer1.0/conv1/Conv`) and NAME.keys.json:

    {"state_dict": [every state_dict key, buffers included, in order],
     "modules": [every name of model.named_modules() but the root],
     "parameters": {state_dict key: bytes}}

The model is exported in eval mode with training=TrainingMode.PRESERVE: BatchNormalization stays
a node of its own, with its weight, bias, running_mean and running_var as graph inputs (the
default, TrainingMode.EVAL, folds it into the convolution before it and drops those names).
The exporter also merges parameters of equal value into one input (fresh BatchNorm weights are
all ones); the parameters get distinct random values first, so that each keeps its own input.
"""
import json
import os
import sys

import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402


def distinct_values(model):
    """Gives every floating-point parameter and buffer random values, so that no two are equal."""
    with torch.no_grad():
        for tensor in list(model.parameters()) + list(model.buffers()):
            if tensor.is_floating_point():
                tensor.uniform_(0.5, 1.5)


def export(model, inputs, input_names, path):
    model.eval()
    torch.onnx.export(model, inputs, path, export_params=False, opset_version=13,
                      input_names=input_names, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE)


def keys(model):
    """The state_dict keys, module names and parameter sizes written to NAME.keys.json."""
    state = model.state_dict(keep_vars=True)
    return {
        "state_dict": list(state),
        "modules": [name for name, _ in model.named_modules() if name],
        "parameters": {k: v.numel() * v.element_size() for k, v in state.items()},
    }


def check_inputs(path, input_names, state_dict_keys):
    """The state_dict keys that are not graph inputs; fails if an input is neither a model
    input nor a state_dict key."""
    graph = onnx.load(path).graph
    names = [i.name for i in graph.input]
    strange = [n for n in names if n not in state_dict_keys and n not in input_names]
    if strange:
        raise SystemExit(f"{path}: inputs that are no state_dict key: {strange[:10]}")
    present = set(names)
    return [k for k in state_dict_keys if k not in present]


def main():
    args = sys.argv[1:]
    out_dir = args[0] if args else "testdata/torch"
    only = set(args[1:])
    os.makedirs(out_dir, exist_ok=True)
    for name in torch_models.MODELS:
        if only and name not in only:
            continue
        torch.manual_seed(0)
        model, inputs, input_names = torch_models.build(name)
        distinct_values(model)
        path = os.path.join(out_dir, name + ".onnx")
        export(model, inputs, input_names, path)
        listing = keys(model)
        keys_path = os.path.join(out_dir, name + ".keys.json")
        with open(keys_path, "w") as f:
            json.dump(listing, f, indent=1)
            f.write("\n")
        missing = check_inputs(path, input_names, listing["state_dict"])
        print(f"{path}: {os.path.getsize(path)} bytes; {len(listing['state_dict'])} state_dict "
              f"keys, {len(missing)} not graph inputs"
              + (f" (e.g. {', '.join(missing[:3])})" if missing else ""))
        print(f"{keys_path}: {os.path.getsize(keys_path)} bytes")


if __name__ == "__main__":
    main()
