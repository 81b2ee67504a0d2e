"""A device map run as accelerate's dispatch_model runs it, emulated on this CPU (dplace.torch.
dispatch): each mapped module with its parameters and buffers on its device, a hook at the entry
of each mapped module and of each submodule with state inside it (accelerate's
attach_execution_device_hook) moving the tensors it is given to that device, the model's outputs moved back to
where its first input is, and every other op running where its inputs are. Every device is this
CPU: a tensor carries the device it would be on, a move is a copy, and a torch function whose
tensor arguments would sit on two devices raises eager PyTorch's error. The first step runs under
these checks; later steps repeat its copies without them, so that a timed step costs what the
runtime emulated costs (same inputs' shapes assumed: the step's control flow is the first's).
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


class _Moves:
    """What the hooks of one dispatched model copied, in call order: a step under the checks
    records it, and a timed step replays it without them (the checks cost Python time per op
    that the runtime emulated does not spend)."""

    def __init__(self):
        self.copied = []  # per tensor a hook was given, in order: whether it was copied
        self.replay = None  # an iterator over `copied` while replaying

    def move(self, obj, device):
        """`obj` with every tensor on another device copied to `device` (accelerate's
        send_to_device)."""
        if isinstance(obj, torch.Tensor):
            if self.replay is not None:
                return obj.clone() if next(self.replay) else obj
            copy = _device_of(obj) not in (None, device)
            self.copied.append(copy)
            if not copy:
                return obj
            with torch.overrides._no_torch_function_mode():
                out = obj.clone()
            setattr(out, _TAG, device)
            return out
        if isinstance(obj, tuple):
            return tuple(self.move(x, device) for x in obj)
        if isinstance(obj, list):
            return [self.move(x, device) for x in obj]
        if isinstance(obj, dict):
            return {k: self.move(v, device) for k, v in obj.items()}
        return obj


def _hook(module, device, moves):
    """Wraps module.forward so that its arguments move to `device` at its entry."""
    forward = module.forward

    @functools.wraps(forward)
    def moved(*args, **kwargs):
        return forward(*moves.move(args, device), **moves.move(kwargs, device))

    module.forward = moved


class Dispatched(torch.nn.Module):
    """The model dispatched by a device map. The first call runs a step under the checks (and
    raises eager PyTorch's error where it would fail); later calls run the same step with the
    same copies and no checks."""

    def __init__(self, model, device_map, moves):
        super().__init__()
        self.model = model
        self.device_map = dict(device_map)
        self._moves = moves
        self._checked = False

    def forward(self, *args, **kwargs):
        moves = self._moves
        if self._checked:
            moves.replay = iter(moves.copied)
            try:
                return self.model(*args, **kwargs)
            finally:
                moves.replay = None
        first = next(_tensors((args, kwargs)), None)
        home = _device_of(first) if first is not None else None
        moves.copied = []
        with _OneDevicePerOp():
            out = self.model(*args, **kwargs)
        self._checked = True
        return out if home is None else moves.move(out, home)


def dispatch(model, device_map):
    """`model` (moved in place, as dispatch_model moves it) run as `device_map` says."""
    moves = _Moves()
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
        _hook(target, device, moves)
        # accelerate's attach_execution_device_hook: every submodule with state moves its inputs
        # too (a ModuleList mapped whole is never called; its blocks are).
        for sub in target.modules():
            if sub is not target and len(sub.state_dict()) > 0:
                _hook(sub, device, moves)
    return Dispatched(model, device_map, moves)
