#!/usr/bin/python3
"""Checks an accelerate-style device map against a model of tools/torch_models.py.

    /usr/bin/python3 tools/check_device_map.py MODEL DEVICE_MAP.json

The device map is a flat JSON object {module path: device}, "" standing for the whole model. The
check passes when
  - every key resolves: model.get_submodule(key), or, as accelerate also writes them, the name of
    a parameter or buffer (ViT's class_token belongs to the root, so a map that splits ViT needs it);
  - no key is an ancestor of another ("" is the ancestor of every other key, "h.1" of "h.1.attn");
  - every state_dict key has exactly one key of the map as a prefix, at a dot boundary.
It prints a one-line summary, or lists the first 10 failures and exits 1. It exits 77 when torch
cannot be imported. The model is built with its parameters on the "meta" device (no memory, no
initialisation), or on the CPU where that fails.
"""
import contextlib
import json
import os
import sys


def duplicate_keys(pairs):
    """json object_pairs_hook: the object as a dict, and any key that appears twice."""
    seen, duplicates = {}, []
    for key, value in pairs:
        if key in seen:
            duplicates.append(key)
        seen[key] = value
    if duplicates:
        raise ValueError(f"keys that appear more than once: {duplicates[:10]}")
    return seen


@contextlib.contextmanager
def parameters_on_meta(torch):
    """Moves each parameter to the meta device as it is registered, as accelerate's
    init_empty_weights does, so that the model's initialisation costs nothing."""
    register = torch.nn.Module.register_parameter

    def register_on_meta(module, name, param):
        register(module, name, param)
        if param is not None:
            kind = type(module._parameters[name])
            module._parameters[name] = kind(module._parameters[name].to("meta"),
                                            requires_grad=param.requires_grad)

    torch.nn.Module.register_parameter = register_on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register


def build(torch, torch_models, name):
    try:
        with parameters_on_meta(torch):
            return torch_models.build(name)[0]
    except (RuntimeError, NotImplementedError):
        return torch_models.build(name)[0]


def resolves(model, key):
    """Whether a device-map key names the root, a submodule, a parameter or a buffer."""
    if key == "":
        return True
    for lookup in (model.get_submodule, model.get_parameter, model.get_buffer):
        try:
            lookup(key)
            return True
        except AttributeError:
            pass
    return False


def covers(key, name):
    """Whether device-map key `key` is a prefix of state_dict key `name` at a dot boundary."""
    return key == "" or name == key or name.startswith(key + ".")


def check(model, device_map):
    """The failures, as lines; empty when the map passes."""
    keys = list(device_map)
    failures = [f"key {k!r} names no module, parameter or buffer"
                for k in keys if not resolves(model, k)]
    for a in keys:
        for b in keys:
            if a != b and covers(a, b):
                failures.append(f"key {a!r} is an ancestor of key {b!r}")
    for name in model.state_dict():
        owners = [k for k in keys if covers(k, name)]
        if len(owners) != 1:
            where = f"keys {owners}" if owners else "no key"
            failures.append(f"state_dict key {name!r} is covered by {where}")
    return failures


def main():
    if len(sys.argv) != 3:
        raise SystemExit(f"usage: {sys.argv[0]} MODEL DEVICE_MAP.json")
    try:
        import torch
    except ImportError as e:
        print(f"torch is not importable ({e}); nothing checked", file=sys.stderr)
        sys.exit(77)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_models

    name, path = sys.argv[1:]
    if name not in torch_models.MODELS:
        raise SystemExit(f"unknown model {name!r}; known: {', '.join(torch_models.MODELS)}")
    try:
        with open(path) as f:
            device_map = json.load(f, object_pairs_hook=duplicate_keys)
    except (OSError, ValueError) as e:
        raise SystemExit(f"{path}: {e}")
    if not isinstance(device_map, dict):
        raise SystemExit(f"{path}: not a JSON object")
    model = build(torch, torch_models, name)
    failures = check(model, device_map)
    if failures:
        more = ", the first 10" if len(failures) > 10 else ""
        print(f"{name}: {len(failures)} failures{more}:")
        for line in failures[:10]:
            print("  " + line)
        sys.exit(1)
    print(f"{name}: {len(device_map)} keys, all resolve; "
          f"{len(model.state_dict())} state_dict keys, all covered")


if __name__ == "__main__":
    main()
