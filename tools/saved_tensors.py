#!/usr/bin/python3
"""Measures the tensors that autograd saves for the backward pass of one training-mode forward.

Run with Debian's Python and packages (python3-torch, python3-torchvision), on the CPU, in fp32:

    /usr/bin/python3 tools/saved_tensors.py testdata/torch/saved_tensors.json

For resnet50, vit_b_16 and gpt2_small of tools/torch_models.py (torch.manual_seed(0), model.train(),
grad enabled, no backward) one forward runs under torch.autograd.graph.saved_tensors_hooks. The
pack hook keeps every tensor autograd saves; per model the JSON gives:

    saved_activation_bytes        the bytes of the storages that the saved tensors keep alive,
                                  each storage counted once (a saved view counts its base's
                                  storage), leaving out the storages of the model's parameters and
                                  buffers and of its example inputs
    saved_input_bytes             the same for the storages of the example inputs
    saved_bytes_not_deduplicated  numel * element size of every saved tensor that is no
                                  parameter or buffer (inputs included), each time it is saved
    saved_tensors                 the number of tensors packed (parameters included)
    parameter_bytes, buffer_bytes the model's parameters and buffers (non-persistent ones included)

For the transformers it adds saved_by_grad_fn: the saved activation bytes by the class of the
autograd node that saved them, and saved_by_field, by class and saved field (`_saved_self` is an
input of the op, `_saved_result` its output). The pack hook cannot see which node it packs for
(this torch has no current-node query), so after the forward the script walks the grad_fn graph
and reads every node's `_saved_*` fields; reading one calls the unpack hook, which notes the
index of the pack it unpacks, so each field is matched to its pack. A storage saved by
several nodes is counted for the one that saved it first in the forward; the script checks that
the walk reaches every pack and that the breakdown adds up to saved_activation_bytes.
"""
import gc
import json
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402

MODELS = {"resnet50": 32, "vit_b_16": 32, "gpt2_small": 8}
BREAKDOWN = ("vit_b_16", "gpt2_small")


def storage_of(tensor):
    """The untyped storage of a tensor (shared by a view and its base)."""
    return tensor._storage() if hasattr(tensor, "_storage") else tensor.storage()


def storage_key(tensor):
    return storage_of(tensor).data_ptr()


def storage_bytes(tensor):
    return storage_of(tensor).nbytes()


def tensor_bytes(tensor):
    return tensor.numel() * tensor.element_size()


class Hooks:
    """Pack and unpack hooks that keep every packed tensor and note which packs are unpacked."""

    def __init__(self):
        self.packed = []
        self.unpacked = []

    def pack(self, tensor):
        self.packed.append(tensor)
        return len(self.packed) - 1

    def unpack(self, index):
        self.unpacked.append(index)
        return self.packed[index]


def saved_fields(node, hooks):
    """(field name, pack index) for every tensor in a grad_fn node's `_saved_*` fields."""
    for field in dir(node):
        if not field.startswith("_saved_"):
            continue
        hooks.unpacked.clear()
        try:
            getattr(node, field)
        except RuntimeError:
            continue
        for index in hooks.unpacked:
            yield field, index


def walk(output, hooks):
    """Maps each pack index to "NodeClass._saved_field" by walking the grad_fn graph."""
    owner = {}
    seen = set()
    stack = [output.grad_fn]
    nodes = []  # keeps the node objects alive, so their ids stay unique
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        for field, index in saved_fields(node, hooks):
            owner[index] = f"{type(node).__name__}.{field}"
        stack.extend(next_node for next_node, _ in node.next_functions)
    if len(owner) != len(hooks.packed):
        raise SystemExit(f"the grad_fn walk reached {len(owner)} of {len(hooks.packed)} packs")
    return owner


def sorted_desc(counts):
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def measure(name, batch):
    torch.manual_seed(0)
    model, inputs, _ = torch_models.build(name)
    model.train()
    params = list(model.parameters())
    buffers = list(model.buffers())
    model_storages = {storage_key(t) for t in params + buffers}
    input_storages = {storage_key(t) for t in inputs}
    start = time.time()
    hooks = Hooks()
    with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
        output = model(*inputs)
    seconds = time.time() - start
    packed = hooks.packed

    first = {}  # storage -> index of its first pack, for activations and inputs
    not_deduplicated = 0
    for i, t in enumerate(packed):
        key = storage_key(t)
        if key in model_storages:
            continue
        not_deduplicated += tensor_bytes(t)
        first.setdefault(key, i)
    activation = sum(storage_bytes(packed[i]) for k, i in first.items() if k not in input_storages)
    saved_input = sum(storage_bytes(packed[i]) for k, i in first.items() if k in input_storages)
    result = {
        "batch": batch,
        "saved_activation_bytes": activation,
        "saved_input_bytes": saved_input,
        "saved_bytes_not_deduplicated": not_deduplicated,
        "saved_tensors": len(packed),
        "parameter_bytes": sum(tensor_bytes(t) for t in params),
        "buffer_bytes": sum(tensor_bytes(t) for t in buffers),
    }
    if name in BREAKDOWN:
        owner = walk(output, hooks)
        by_node, by_field = {}, {}
        for key, i in first.items():
            if key in input_storages:
                continue
            field = owner[i]
            node = field.split(".")[0]
            by_node[node] = by_node.get(node, 0) + storage_bytes(packed[i])
            by_field[field] = by_field.get(field, 0) + storage_bytes(packed[i])
        assert sum(by_node.values()) == activation
        result["saved_by_grad_fn"] = sorted_desc(by_node)
        result["saved_by_field"] = sorted_desc(by_field)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    print(f"{name}: {activation / 2 ** 30:.3f} GiB saved activations, {len(packed)} tensors "
          f"saved; forward {seconds:.0f} s; peak RSS so far {peak:.1f} GiB", flush=True)
    return result


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "testdata/torch/saved_tensors.json"
    models = {}
    for name, batch in MODELS.items():
        models[name] = measure(name, batch)
        gc.collect()
    report = {"generated_by": "tools/saved_tensors.py", "torch": torch.__version__,
              "models": models}
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    print(f"{path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
