"""A PyTorch module as a dplace-graph/1 document, from what it runs (the front end of dplace.torch
for models torch.fx cannot trace symbolically).

One training-mode forward runs under a TorchDispatchMode that records every aten op that computes a
tensor, with module hooks that say which module runs it, and saved_tensors_hooks that say what
autograd keeps. Data-dependent sizes (argsort and gather of random noise), Python arithmetic on
shapes (int(L * ratio)), slicing a buffer by a traced length and control flow all run as they run:
the graph is the concrete path for these inputs. It runs on the meta device (no memory, no time, the
model untouched) where every op has a meta kernel and no value is needed, else on a copy of the model
with the real inputs. Tied and shared parameters are one tensor, held by the first op that reads it.
Imported only by dplace.torch, which imports torch lazily.
"""

import contextlib
import copy
import math
import os
import traceback

import torch
import torch.nn.functional as F
from torch.utils._pytree import tree_flatten
from torch.utils._python_dispatch import TorchDispatchMode

from ._torch_core import error as _dplace_error

# aten ops whose backward runs one GEMM per operand that requires a gradient: (operand positions).
_GEMM_OPERANDS = {"mm": (0, 1), "bmm": (0, 1), "addmm": (1, 2), "baddbmm": (1, 2),
                  "addbmm": (1, 2), "mv": (0, 1), "addmv": (1, 2), "dot": (0, 1),
                  "convolution": (0, 1)}
# aten ops that compute nothing (views, copies, fills, factories, indexing): 0 FLOPs.
_NO_FLOPS = {"view", "_unsafe_view", "_reshape_alias", "reshape", "t", "transpose", "permute",
             "expand", "slice", "select", "unsqueeze", "squeeze", "as_strided", "alias", "detach",
             "split", "split_with_sizes", "unbind", "chunk", "narrow", "clone", "_to_copy",
             "copy_", "cat", "stack", "contiguous", "empty", "empty_like", "zeros", "zeros_like",
             "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_empty",
             "new_full", "arange", "fill_", "zero_", "lift_fresh", "lift_fresh_copy", "index",
             "index_select", "gather", "embedding", "repeat", "constant_pad_nd", "flip", "roll",
             "tril", "triu", "masked_fill", "masked_fill_", "scalar_tensor", "_local_scalar_dense"}
# aten ops whose backward keeps their (first) output, as derivatives.yaml says ("result").
_SAVES_RESULT = {"relu", "sigmoid", "tanh", "exp", "exp2", "expm1", "_softmax", "_log_softmax",
                 "sqrt", "rsqrt", "reciprocal", "tan", "elu", "norm", "linalg_vector_norm",
                 "cumprod", "prod", "std"}
_FIVE_PER_ELEMENT = {"_softmax", "_log_softmax", "native_layer_norm", "native_batch_norm",
                     "native_group_norm", "_native_batch_norm_legit"}


def _prod(xs):
    return math.prod(int(x) for x in xs)


def _flops(name, args, out):
    """FLOPs of one aten op (a multiply-add counts 2) from its tensors' shapes."""
    if name == "mm":
        return 2 * _prod(args[0].shape) * args[1].shape[1]
    if name == "addmm":
        return 2 * _prod(args[1].shape) * args[2].shape[1]
    if name == "bmm":
        return 2 * _prod(args[0].shape) * args[1].shape[2]
    if name in ("baddbmm", "addbmm"):
        return 2 * _prod(args[1].shape) * args[2].shape[2]
    if name in ("mv", "dot"):
        return 2 * _prod(args[0].shape)
    if name == "addmv":
        return 2 * _prod(args[1].shape)
    if name == "convolution":
        x, w, transposed = args[0], args[1], args[6]
        spatial = x.shape[2:] if transposed else out[0].shape[2:]
        return 2 * _prod(w.shape) * x.shape[0] * _prod(spatial)
    if name in _NO_FLOPS:
        return 0
    elements = sum(t.numel() for t in out)
    return 5 * elements if name in _FIVE_PER_ELEMENT else elements


def storage_of(t):
    """A tensor's storage: untyped_storage() where torch has it (2.0 on; 2.x drops _storage)."""
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t._storage()


def storage_key(t):
    """What identifies a tensor's memory: its storage (shared by views and in-place results)."""
    try:
        return storage_of(t)._cdata
    except (RuntimeError, NotImplementedError, AttributeError):
        return ("tensor", id(t))


def _nbytes(t):
    return t.numel() * t.element_size()


class _Op:
    __slots__ = ("name", "type", "inputs", "outputs", "flops", "factor", "saves_output",
                 "saved_inputs", "inner_bytes")

    def __init__(self, name, kind, inputs, outputs, flops, factor):
        self.name, self.type, self.inputs, self.outputs = name, kind, inputs, outputs
        self.flops, self.factor = flops, factor
        self.saves_output, self.saved_inputs, self.inner_bytes = False, set(), 0


class _Recorder(TorchDispatchMode):
    """Records every aten op that returns a tensor, under the module that runs it."""

    def __init__(self, scope):
        super().__init__()
        self.scope = scope  # the module path stack, kept by the module hooks
        self.ops = []
        self.keep = []      # every tensor seen stays alive, so that ids and storages stay distinct
        self.names = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        if not outs:
            return out
        name = func.overloadpacket.__name__
        ins = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        operands = _GEMM_OPERANDS.get(name)
        if operands is not None:
            factor = sum(1 for i in operands if i < len(args) and
                         isinstance(args[i], torch.Tensor) and args[i].requires_grad)
        else:
            factor = int(any(t.requires_grad for t in ins))
        path = self.scope[-1] if self.scope else ""
        base = f"/{path}/{name}" if path else f"/{name}"
        count = self.names.get(base, 0)
        self.names[base] = count + 1
        op_name = base if count == 0 else f"{base}_{count}"
        self.ops.append(_Op(op_name, name, ins, outs, _flops(name, args, outs), factor))
        self.keep.extend(ins + outs)
        return out


def _dropout(input, p=0.5, training=True, inplace=False):
    """F.dropout as CUDA runs it (native_dropout, which keeps a one-byte mask per element); the
    CPU's kernel keeps the scaled float noise instead."""
    if not training or p == 0:
        return input
    return torch.native_dropout(input, p, True)[0]


@contextlib.contextmanager
def _cuda_dropout():
    saved = F.dropout
    F.dropout = _dropout
    try:
        yield
    finally:
        F.dropout = saved


def _module_names(model):
    names = {}
    for name, m in model.named_modules(remove_duplicate=False):
        names.setdefault(id(m), name)
    return names


def _run(model, inputs, meta):
    """(recorder, packs, outside storages, parameter names by tensor id) of one training forward."""
    names = _module_names(model)
    scope = []
    calls = {}

    def pre(module, args):
        # A module's K-th call is "<path>_K", as torch.onnx scopes it: the calls are apart (a
        # dropout applied at a stack's start and its end), and a device map reads them as one.
        name = names.get(id(module), scope[-1] if scope else "")
        calls[id(module)] = calls.get(id(module), 0) + 1
        scope.append(name if calls[id(module)] == 1 or not name
                     else f"{name}_{calls[id(module)] - 1}")

    def post(module, args, result):
        if scope:
            scope.pop()

    key_of = {}
    for key, t in model.state_dict(keep_vars=True).items():
        key_of.setdefault(id(t), key)
    state = named_tensors(model)
    if meta:
        from torch.nn.utils import stateless
        by_id = {}
        for v in state.values():
            if id(v) not in by_id:
                by_id[id(v)] = on_meta(v)
                if id(v) in key_of:
                    key_of[id(by_id[id(v)])] = key_of[id(v)]
        moved = {k: by_id[id(v)] for k, v in state.items()}
        inputs = tuple(on_meta(x) for x in inputs)
        reparam = stateless._reparametrize_module(model, moved)
        tensors = list(by_id.values())
    else:
        reparam = contextlib.nullcontext()
        tensors = list(state.values())
    hooks = [torch.nn.modules.module.register_module_forward_pre_hook(pre),
             torch.nn.modules.module.register_module_forward_hook(post)]
    rec = _Recorder(scope)
    packs = []

    def pack(t):
        packs.append((len(rec.ops), t))
        return t

    try:
        with training_mode(model), torch.enable_grad(), reparam, _cuda_dropout(), \
                torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), rec:
            model(*inputs)
    except Exception as e:
        e._dplace_scope = list(scope)  # where it failed, for the error message
        raise
    finally:
        for h in hooks:
            h.remove()
    outside = {storage_key(t) for t in tensors}
    outside.update(storage_key(t) for t in inputs if isinstance(t, torch.Tensor))
    return rec, packs, outside, key_of, tensors, scope


def named_tensors(model):
    """{full name: tensor} of every parameter and buffer, a tied one under each of its names,
    non-persistent buffers included."""
    out = {}
    for prefix, m in model.named_modules(remove_duplicate=False):
        for table in (m._parameters, m._buffers):
            for name, t in table.items():
                if t is not None:
                    out[f"{prefix}.{name}" if prefix else name] = t
    return out


def on_meta(x):
    """A meta tensor standing in for `x` (a Parameter for a Parameter), or `x` itself."""
    if isinstance(x, torch.Tensor):
        t = torch.empty_like(x, device="meta")
        return torch.nn.Parameter(t, x.requires_grad) if isinstance(x, torch.nn.Parameter) \
            else t.requires_grad_(x.requires_grad)
    return x


@contextlib.contextmanager
def training_mode(model):
    """`model` and every module in it in training mode; each module's own mode restored after."""
    modes = [(m, m.training) for m in model.modules()]
    model.train()
    try:
        yield
    finally:
        for m, mode in modes:
            m.training = mode


def where(exc, scope=()):
    """' in module M at FILE:LINE' for an exception raised while a model ran: the module being run
    and the last frame of the user's code (not torch's, not dplace's)."""
    frames = traceback.extract_tb(exc.__traceback__)
    here = os.path.dirname(os.path.abspath(__file__))
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    user = [f for f in frames if not os.path.abspath(f.filename).startswith((here, torch_dir))]
    text = f" in module '{scope[-1]}'" if scope and scope[-1] else ""
    if user:
        text += f" at {os.path.basename(user[-1].filename)}:{user[-1].lineno}"
    return text


def first_line(e):
    """The first line of an exception's message (libraries append lines to what passes)."""
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def record(model, example_inputs):
    """The recorded run: meta first, then a real run on a copy of the model where an op has no
    meta kernel or a value is needed. Raises dplace.Error naming the module and the line."""
    try:
        return _run(model, example_inputs, meta=True)
    except Exception:  # a value needed (.item(), a branch on a tensor), a missing meta kernel
        pass
    twin = copy.deepcopy(model)
    try:
        return _run(twin, example_inputs, meta=False)
    except Exception as e:
        raise _dplace_error(f"{type(model).__name__} does not run on the example inputs"
                            f"{where(e, getattr(e, '_dplace_scope', ()))}: {first_line(e)}") \
            from None


def graph_dict(model, example_inputs, name):
    """The dplace-graph/1 dict of the aten ops one training forward of `model` runs.

    One op per aten op that returns a tensor, named "/<module path>/<aten op>" (a suffix _K for
    its K-th repeat in that module), typed by the aten op; FLOPs from the shapes (GEMMs and
    convolutions 2 x multiply-adds, views, copies and indexing 0, norms and softmax 5 per element,
    others 1 per element); what autograd keeps from saved_tensors_hooks, dropout's mask as a GPU
    keeps it; views and in-place results as aliases; each parameter held by its first reader.
    """
    rec, packs, outside, key_of, state, _ = record(model, example_inputs)
    producer = {}  # id(tensor) -> (op index, output index)
    made = {}      # storage -> (op index, output index) that allocated it
    views = []     # per op, per output: False, None (external memory) or (op, output)
    for i, op in enumerate(rec.ops):
        ins = {storage_key(t): t for t in op.inputs}
        mine = []
        for k, t in enumerate(op.outputs):
            key = storage_key(t)
            if key in outside:
                mine.append(None)
            elif key in ins and id(ins[key]) in producer:
                mine.append(producer[id(ins[key])])
            elif key in made:
                mine.append(made[key])
            else:
                made[key] = (i, k)
                mine.append(False)
            producer.setdefault(id(t), (i, k))
        views.append(mine)
    _attribute_packs(rec.ops, packs, outside, producer, made)
    params = {id(t) for t in state if isinstance(t, torch.nn.Parameter)}
    held = set()
    ops_json, edges = [], []
    for i, op in enumerate(rec.ops):
        own, shared = [], []
        for t in op.inputs:
            if id(t) in params and id(t) not in held:
                held.add(id(t))
                own.append(t)
            elif id(t) in params and id(t) in key_of and key_of[id(t)] not in shared:
                shared.append(key_of[id(t)])
        in_bytes = sum(_nbytes(t) for t in op.inputs)
        outs = []
        for k, t in enumerate(op.outputs):
            base = views[i][k]
            if base is False:
                outs.append(_nbytes(t))
            elif base is None:
                outs.append({"bytes": _nbytes(t), "view_of": None})
            else:
                outs.append({"bytes": _nbytes(t),
                             "view_of": {"op": rec.ops[base[0]].name, "output": base[1]}})
        entry = {"name": op.name, "type": op.type, "flops": float(op.flops),
                 "bytes_accessed": float(in_bytes + sum(_nbytes(t) for t in op.outputs)),
                 "param_bytes": float(sum(_nbytes(t) for t in own)), "outputs": outs,
                 "saves_output": op.saves_output, "backward_factor": op.factor}
        if op.inner_bytes:
            entry["saved_bytes"] = float(op.inner_bytes)
            if op.type == "native_dropout":
                # The mask as CUDA keeps it; on a CPU the scaled noise, typed like the output.
                entry["saved_bytes_cpu"] = float(_nbytes(op.outputs[0]))
        named = [key_of[id(t)] for t in own if id(t) in key_of]
        if named:
            entry["parameters"] = named
        if shared:
            entry["shared_parameters"] = shared
        ops_json.append(entry)
        seen = set()
        for t in op.inputs:
            src = producer.get(id(t))
            if src is None or src[0] >= i or (src, id(t)) in seen:
                continue
            seen.add((src, id(t)))
            edge = {"from": rec.ops[src[0]].name, "to": op.name, "output": src[1]}
            if id(t) not in op.saved_inputs:
                edge["saved"] = False
            edges.append(edge)
    if not ops_json:
        raise _dplace_error(f"model {name} computes nothing")
    return {"format": "dplace-graph/1", "name": name, "ops": ops_json, "edges": edges}


def _attribute_packs(ops, packs, outside, producer, made):
    """Which op's backward keeps each saved tensor. Autograd saves an op's inputs before the op
    runs (before the recorder sees it) and its outputs after: a tensor packed when n ops had run
    is an output of op n-1 (its result, for the ops whose backward reads it, or a second output:
    statistics, indices, a mask), else an input of op n, else something op n made inside."""
    for n, t in packs:
        key = storage_key(t)
        if key in outside:
            continue
        last = ops[n - 1] if n > 0 else None
        out_k = next((k for k, o in enumerate(last.outputs) if storage_key(o) == key), -1) \
            if last is not None else -1
        if out_k == 0 and last.type.rstrip("_") in _SAVES_RESULT:
            last.saves_output = True
            continue
        op = ops[n] if n < len(ops) else None
        match = next((x for x in op.inputs if storage_key(x) == key), None) if op else None
        if match is not None and id(match) in producer:
            op.saved_inputs.add(id(match))
        elif out_k > 0:
            last.inner_bytes += _nbytes(t)
        elif out_k == 0:
            last.saves_output = True
        elif op is not None and key not in made:
            op.inner_bytes += _nbytes(t)
            made[key] = None
        else:  # kept by an op the recorder did not see: the producer keeps it for its backward
            src = producer.get(id(t)) or made.get(key)
            if src:
                ops[src[0]].saves_output = True
