"""A device map run as accelerate's dispatch_model runs it, emulated on this CPU (dplace.torch.
dispatch): each mapped module with its parameters and buffers on its device, a hook at each mapped
module's entry moving the tensors it is given to that device, the model's outputs moved back to
where its first input is, and every other op running where its inputs are. Every device is this
CPU: a tensor carries the device it would be on, a move is a copy, and a torch function whose
tensor arguments would sit on two devices raises eager PyTorch's error.
"""

import functools

import torch
from torch.overrides import TorchFunctionMode

_TAG = "_dplace_device"


def _tensors(obj):
    """The tensors in nested tuples, lists and dicts."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            yield from _tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors(x)


def _device_of(t):
    return getattr(t, _TAG, None)


def _name(device):
    return "cpu" if device == "cpu" else f"cuda:{device}"


class _OneDevicePerOp(TorchFunctionMode):
    """Eager PyTorch's rule: a function's tensor arguments are on one device (a 0-dim tensor, or
    one made inside the model without a device, goes with any), and its results are there."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        device = None
        for t in _tensors((args, kwargs)):
            d = getattr(t, _TAG, None)
            if d is None or d == device or t.dim() == 0:
                continue
            if device is not None:
                first, second = sorted((_name(device), _name(d)))
                raise RuntimeError("Expected all tensors to be on the same device, but found at "
                                   f"least two devices, {first} and {second}! (in {func.__name__})")
            device = d
        out = func(*args, **kwargs)
        if device is not None:
            for t in _tensors(out):
                setattr(t, _TAG, device)
        return out


def _move(obj, device):
    """`obj` with every tensor on another device copied to `device` (accelerate's
    send_to_device)."""
    if isinstance(obj, torch.Tensor):
        if _device_of(obj) in (None, device):
            return obj
        with torch.overrides._no_torch_function_mode():
            out = obj.clone()
        setattr(out, _TAG, device)
        return out
    if isinstance(obj, tuple):
        return tuple(_move(x, device) for x in obj)
    if isinstance(obj, list):
        return [_move(x, device) for x in obj]
    if isinstance(obj, dict):
        return {k: _move(v, device) for k, v in obj.items()}
    return obj


def _hook(module, device):
    """Wraps module.forward so that its arguments move to `device` at its entry."""
    forward = module.forward

    @functools.wraps(forward)
    def moved(*args, **kwargs):
        return forward(*_move(args, device), **_move(kwargs, device))

    module.forward = moved


class Dispatched(torch.nn.Module):
    """The model dispatched by a device map; calling it runs a step under the emulation."""

    def __init__(self, model, device_map):
        super().__init__()
        self.model = model
        self.device_map = dict(device_map)

    def forward(self, *args, **kwargs):
        first = next(_tensors((args, kwargs)), None)
        home = _device_of(first) if first is not None else None
        with _OneDevicePerOp():
            out = self.model(*args, **kwargs)
        return out if home is None else _move(out, home)


def dispatch(model, device_map):
    """`model` (moved in place, as dispatch_model moves it) run as `device_map` says."""
    # Shallower keys first, so that a deeper key (a parameter of a split module) wins.
    for key in sorted(device_map, key=lambda k: (k != "", k.count("."), k)):
        device = device_map[key]
        try:
            target = model if key == "" else model.get_submodule(key)
        except AttributeError:
            setattr(model.get_parameter(key), _TAG, device)
            continue
        for t in list(target.parameters()) + list(target.buffers()):
            setattr(t, _TAG, device)
        _hook(target, device)
    return Dispatched(model, device_map)
