"""A PyTorch module as a dplace-graph/1 document, through torch.fx (the front end of dplace.torch).

Traces the model with torch.fx, runs the example inputs through it (torch.fx's ShapeProp) and writes
one dplace op per fx node that computes a tensor, named after the module that runs it, with its
FLOPs from the real shapes, the bytes it touches, its parameters and its output tensors. It does not
expand a training step (the core does, in load_graph(..., training=True)) nor time anything
(_torch_profile.py). Imported only by dplace.torch, which imports torch lazily.
"""

import contextlib
import copy
import dis
import functools
import inspect
import math
import operator

import torch
import torch.fx as fx
from torch.fx.node import map_aggregate
from torch.fx.passes.shape_prop import ShapeProp, _extract_tensor_metadata

from ._torch_core import error as _dplace_error
from ._torch_record import first_line as _first_line, named_tensors as _named_tensors
from ._torch_record import on_meta as _on_meta, storage_key as _storage_key
from ._torch_record import storage_of as _storage_of
from ._torch_record import training_mode as _training_mode, where


# --- tracing -------------------------------------------------------------------------------------

def _encoder_forward(self, src, mask=None, src_key_padding_mask=None):
    """nn.TransformerEncoder.forward without its fast path (which branches on tensor values)."""
    output = src
    for layer in self.layers:
        output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask)
    if self.norm is not None:
        output = self.norm(output)
    return output


def _encoder_layer_forward(self, src, src_mask=None, src_key_padding_mask=None):
    """nn.TransformerEncoderLayer.forward's general path (torch 1.13), its fast path left out."""
    x = src
    if self.norm_first:
        x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask)
        x = x + self._ff_block(self.norm2(x))
    else:
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask))
        x = self.norm2(x + self._ff_block(x))
    return x


# Modules of torch.nn that fx would keep whole but whose forward we trace through, with a
# traceable forward of the same meaning: the layers of a Transformer encoder are what a placer
# should move, and their fast path branches on tensor values, which symbolic tracing cannot follow.
_TRACE_THROUGH = {
    torch.nn.TransformerEncoder: _encoder_forward,
    torch.nn.TransformerEncoderLayer: _encoder_layer_forward,
}


class Tracer(fx.Tracer):
    """fx's tracer that records, on every node, the module whose forward created it.

    Leaves are fx's (the modules of torch.nn, but nn.Sequential), plus `leaves` (classes), minus the
    Transformer encoder and its layers, which it traces through with their general path.
    """

    def __init__(self, leaves=()):
        super().__init__()
        self._leaves = tuple(leaves)
        self._scope = ""

    def is_leaf_module(self, m, qualname):
        if self._leaves and isinstance(m, self._leaves):
            return True
        if type(m) in _TRACE_THROUGH:
            return False
        return super().is_leaf_module(m, qualname)

    def call_module(self, m, forward, args, kwargs):
        outer = self._scope
        self._scope = self.path_of_module(m)
        try:
            own = _TRACE_THROUGH.get(type(m))
            if own is not None and not (self._leaves and isinstance(m, self._leaves)):
                forward = functools.partial(own, m)
            return super().call_module(m, forward, args, kwargs)
        finally:
            self._scope = outer

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        node.meta["dplace_scope"] = self._scope
        return node


def _proxy_iter(self):
    """fx.Proxy.__iter__ that finds the unpacking instruction by its offset: torch 1.13 indexes
    the instruction list by f_lasti // 2, which Python 3.11's inline caches break, so that
    `out, (h, c) = self.lstm(x)` fails to trace ("list index out of range")."""
    frame = inspect.currentframe().f_back
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            if inst.opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(inst.argval))
            break
    return self.tracer.iter(self)


@contextlib.contextmanager
def _unpackable_proxies():
    saved = fx.Proxy.__iter__
    fx.Proxy.__iter__ = _proxy_iter
    try:
        yield
    finally:
        fx.Proxy.__iter__ = saved


def trace(model, leaves=()):
    """The model as an fx GraphModule whose nodes say their module (meta "dplace_scope").

    A GraphModule is returned as it is. Raises dplace.Error when fx cannot trace the model.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"expected a torch.nn.Module, got {type(model).__name__}")
    if isinstance(model, fx.GraphModule):
        return model
    root = model
    own = _TRACE_THROUGH.get(type(model))
    if own is not None and not (leaves and isinstance(model, tuple(leaves))):
        # fx traces a root by its class's forward: trace a shallow copy whose class has ours.
        root = copy.copy(model)
        root.__class__ = type(type(model).__name__, (type(model),), {"forward": own})
    tracer = Tracer(leaves)
    try:
        with _unpackable_proxies():
            graph = tracer.trace(root)
    except Exception as e:  # fx raises TraceError, NotImplementedError, TypeError, ...
        scope = tracer._scope
        module = model.get_submodule(scope) if scope else model
        raise _dplace_error(
            f"torch.fx cannot trace {type(model).__name__}{where(e, [scope])}: {_first_line(e)} "
            f"(from_module and graph_dict read such a model by running it; apply and profile "
            f"need fx: keep the module whole with leaves=[{type(module).__name__}], or wrap the "
            f"helper that computes on values with torch.fx.wrap)") from None
    name = type(model).__name__
    gm = fx.GraphModule(root, graph, name)
    # The model's own state_dict keys: the GraphModule registers what fx keeps of it (non-persistent
    # buffers, tensor constants) as buffers, which accelerate's device map never names.
    gm._dplace_state_keys = frozenset(model.state_dict())
    return gm


class _ShapeProp(ShapeProp):
    """ShapeProp that keeps each node's value type and raises one line instead of printing."""

    def run_node(self, n):
        try:
            result = fx.Interpreter.run_node(self, n)
        except Exception as e:
            # fx's Interpreter appends lines to what passes through it: keep the first.
            self.failure = (f"the example inputs do not fit the model: at node '{n.name}' "
                            f"({_target_name(n)}): {_first_line(e)}")
            raise
        found = False

        def meta(obj):
            nonlocal found
            if isinstance(obj, torch.Tensor):
                found = True
                return _extract_tensor_metadata(obj)
            return obj

        value = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = value
        n.meta["type"] = type(result)
        return result


def propagate_shapes(gm, example_inputs):
    """Runs the example inputs through gm once, in eval mode and without grad (so that no
    buffer changes), recording every node's value type and tensor shapes; the mode is restored."""
    n_in = sum(1 for n in gm.graph.nodes if n.op == "placeholder")
    if len(example_inputs) > n_in:
        raise _dplace_error(f"the model takes {n_in} inputs, {len(example_inputs)} were given")
    was_training = gm.training
    gm.eval()
    prop = _ShapeProp(gm)
    prop.failure = None
    try:
        with torch.no_grad():
            prop.propagate(*example_inputs)
    except Exception as e:
        raise _dplace_error(prop.failure or f"the example inputs do not fit the model: "
                            f"{_first_line(e)}") from None
    finally:
        gm.train(was_training)


# --- what autograd keeps ---------------------------------------------------------------------

def _tensor_leaves(value):
    """The tensors of a node's value, in the order _tensor_metas and ref_leaves flatten it."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensor_leaves(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensor_leaves(v)]
    return []


def _storage_bytes(t):
    try:
        return _storage_of(t).nbytes()
    except (RuntimeError, NotImplementedError, AttributeError):
        return t.numel() * t.element_size()


class SavedInfo:
    """What one training-mode forward showed autograd keeping, per fx node (by name).

    saved_inputs: node -> names of the argument nodes whose tensors its backward keeps.
    saves_output: nodes whose backward keeps their first output. inner_bytes: node -> bytes its
    backward keeps that are none of the graph's tensors (indices, masks, a fused module's
    insides), each storage counted once. views: node -> {output index: argument node name and
    its leaf index, or None for a parameter's or a model input's memory} for the outputs that
    alias memory the node did not allocate (views and in-place results). backward_factor: node ->
    its backward's work over its forward's (_backward_factor). inner_bytes_cpu: node -> its inner
    bytes on a CPU, where they differ (dropout's noise).
    """

    def __init__(self):
        self.saved_inputs = {}
        self.saves_output = set()
        self.inner_bytes = {}
        self.inner_bytes_cpu = {}
        self.views = {}
        self.backward_factor = {}


class _Recorder(fx.Interpreter):
    """Runs a GraphModule once with grad, noting the tensors autograd packs while each node runs
    (torch.autograd.graph.saved_tensors_hooks) and keeping every value alive, so that storages
    stay distinct for the whole run."""

    def __init__(self, gm):
        super().__init__(gm, garbage_collect_values=False)
        self.packed = {}
        self.values = {}

    def run_node(self, n):
        packed = []

        def pack(t):
            packed.append(t)
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            result = super().run_node(n)
        self.packed[n.name] = packed
        self.values[n.name] = result
        return result


def _run_recorded(gm, example_inputs):
    """A _Recorder run of gm in training mode with grad, on the meta device (no memory, no time,
    the model's state untouched) where every op has a meta kernel, else on a copy of the model
    with the real inputs. Returns (recorder, parameter and buffer tensors it ran with, inputs)."""
    from torch.nn.utils import stateless
    # Tied tensors (one parameter under two names) stay one tensor on the meta device.
    state = _named_tensors(gm)
    by_id = {id(v): _on_meta(v) for v in state.values()}
    meta = {k: by_id[id(v)] for k, v in state.items()}
    inputs = tuple(map_aggregate(a, _on_meta) for a in example_inputs)
    try:
        with _training_mode(gm), torch.enable_grad(), \
                stateless._reparametrize_module(gm, meta):
            rec = _Recorder(gm)
            rec.run(*inputs)
        return rec, list(meta.values()), inputs
    except Exception:  # an op without a meta kernel, a branch on values: run it for real
        pass
    model = copy.deepcopy(gm)
    model.train()
    with torch.enable_grad():
        rec = _Recorder(model)
        rec.run(*example_inputs)
    state = list(model.parameters()) + list(model.buffers())
    return rec, state, tuple(example_inputs)


def record_saved(gm, example_inputs):
    """SavedInfo of gm on example_inputs, or None when the model cannot run in training mode
    (then every output counts as kept: the most a step can need)."""
    try:
        rec, state, inputs = _run_recorded(gm, example_inputs)
    except Exception:
        return None
    outside = {_storage_key(t) for t in state}
    outside.update(_storage_key(t) for a in inputs for t in _tensor_leaves(a))
    info = SavedInfo()
    counted = set()  # storages of inner saved tensors already counted
    made = set()     # storages some node's output allocated
    for n in gm.graph.nodes:
        if n.op in ("placeholder", "output") or n.name not in rec.values:
            continue
        args = []
        fx.node.map_arg((n.args, n.kwargs), args.append)
        arg_keys = {}  # storage -> (argument node name, leaf index)
        for a in args:
            for k, t in enumerate(_tensor_leaves(rec.values.get(a.name))):
                arg_keys.setdefault(_storage_key(t), (a.name, k))
        outs = [_storage_key(t) for t in _tensor_leaves(rec.values[n.name])]
        views = {}
        for k, key in enumerate(outs):
            if key in arg_keys:
                views[k] = arg_keys[key]
            elif key in outside:
                views[k] = None
            else:
                made.add(key)
        if views:
            info.views[n.name] = views
        kept_args, inner, inner_cpu = set(), 0, 0
        dropout = "dropout" in type_name(gm, n).lower()
        for t in rec.packed.get(n.name, ()):
            key = _storage_key(t)
            if key in outside:
                continue
            if outs and key == outs[0]:
                info.saves_output.add(n.name)
            elif key in arg_keys:
                kept_args.add(arg_keys[key][0])
            elif key not in made and key not in counted:
                counted.add(key)
                # Dropout's noise, kept on a GPU as CUDA's fused dropout keeps it (a one-byte
                # mask per element), on a CPU as the CPU kernel does (the scaled float noise).
                inner += t.numel() if dropout else _storage_bytes(t)
                inner_cpu += _storage_bytes(t)
        info.backward_factor[n.name] = _backward_factor(gm, n, rec.values)
        if kept_args:
            info.saved_inputs[n.name] = kept_args
        if inner:
            info.inner_bytes[n.name] = inner
        if inner_cpu != inner:
            info.inner_bytes_cpu[n.name] = inner_cpu
    return info


# Layers and functions whose backward runs one GEMM per operand that needs a gradient: the data
# (their first tensor argument) and the weights (the module's parameters, or the other arguments).
_GEMM_MODULES = (torch.nn.Linear, torch.nn.Bilinear, torch.nn.modules.conv._ConvNd,
                 torch.nn.RNNBase, torch.nn.MultiheadAttention)
_GEMM_FUNCTIONS = {"linear", "bilinear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                   "conv_transpose2d", "conv_transpose3d", "matmul", "bmm", "mm", "einsum"}
_GEMM_WITH_BIAS_FIRST = {"addmm", "baddbmm", "addbmm"}  # (bias, a, b)


def _backward_factor(gm, n, values):
    """The backward's work over the forward's, as autograd runs it (the core's
    Op::backward_factor): for a GEMM or convolution one GEMM per operand that requires a gradient
    (the data, the weights), for another op 1 when any input requires one, else 0."""
    args = []
    fx.node.map_arg((n.args, n.kwargs), args.append)
    tensors = [[t for t in _tensor_leaves(values.get(a.name))] for a in args]
    needs = [any(t.requires_grad for t in ts) for ts in tensors if ts]
    kind = type_name(gm, n)
    if n.op == "call_module":
        m = gm.get_submodule(n.target)
        weights = any(p.requires_grad for p in m.parameters())
        if isinstance(m, _GEMM_MODULES):
            return int(bool(needs and needs[0])) + int(weights)
        return int(weights or any(needs))
    if kind in _GEMM_WITH_BIAS_FIRST and len(needs) >= 3:
        return int(needs[1]) + int(needs[2])
    if kind in _GEMM_FUNCTIONS and needs:
        return int(needs[0]) + int(any(needs[1:]))
    return int(any(needs))


# --- FLOPs ---------------------------------------------------------------------------------------

def _numel(meta):
    return math.prod(meta.shape)


def _bytes(meta):
    return _numel(meta) * torch.empty((), dtype=meta.dtype).element_size()


def _tensor_metas(value):
    """The TensorMetadata leaves of a node's recorded value, in order."""
    out = []

    def visit(v):
        if isinstance(v, (tuple, list)) and not hasattr(v, "shape"):
            for x in v:
                visit(x)
        elif isinstance(v, dict):
            for x in v.values():
                visit(x)
        elif hasattr(v, "shape") and hasattr(v, "dtype") and hasattr(v, "stride"):
            out.append(v)

    visit(value)
    return out


def _rnn_flops(m, x):
    gates = {"LSTM": 4, "GRU": 3}.get(m.mode, 1)
    seq, batch = (x.shape[0], 1) if len(x.shape) == 2 else (
        (x.shape[1], x.shape[0]) if m.batch_first else (x.shape[0], x.shape[1]))
    dirs = 2 if m.bidirectional else 1
    h = m.hidden_size
    total = 0
    for layer in range(m.num_layers):
        width = m.input_size if layer == 0 else h * dirs
        # matrix products of the input and the hidden state with the gates' weights, the biases,
        # and about 3 FLOPs per gate element for the gates' nonlinearities and the cell update.
        total += seq * batch * dirs * gates * h * (2 * (width + h) + 2 + 3)
    return total


def _attention_flops(m, q, k, v):
    e = m.embed_dim
    if len(q.shape) == 2:
        (lq, n), ls = (q.shape[0], 1), k.shape[0]
    elif m.batch_first:
        n, lq, ls = q.shape[0], q.shape[1], k.shape[1]
    else:
        lq, n, ls = q.shape[0], q.shape[1], k.shape[0]
    projections = 2 * n * (lq * e * e + ls * m.kdim * e + ls * m.vdim * e + lq * e * e)
    scores = 2 * n * lq * ls * e  # Q K^T over all heads
    softmax = 5 * n * m.num_heads * lq * ls
    weighted = 2 * n * lq * ls * e  # softmax(.) V
    return projections + scores + softmax + weighted


_VIEWS = {"view", "reshape", "flatten", "transpose", "permute", "unsqueeze", "squeeze", "expand",
          "expand_as", "t", "select", "narrow", "getitem", "chunk", "split", "unbind", "detach",
          "view_as", "unflatten", "movedim", "swapaxes", "Flatten", "Unflatten", "Identity", "size"}
_COPIES = {"contiguous", "cat", "stack", "clone", "to", "type", "float", "half", "double",
           "masked_fill", "pad", "repeat", "zeros_like", "ones_like"}
_NORMS = ("BatchNorm", "LayerNorm", "GroupNorm", "InstanceNorm", "LocalResponseNorm")
_FIVE = {"softmax", "log_softmax", "Softmax", "LogSoftmax", "layer_norm", "batch_norm",
         "group_norm", "instance_norm", "cross_entropy", "CrossEntropyLoss", "nll_loss"}
_MATMUL = {"matmul", "bmm", "mm", "addmm", "baddbmm", "einsum_matmul"}


def node_flops(gm, n, inputs, outputs, training=False):
    """FLOPs of one fx node from its input and output shapes (a multiply-add counts 2).

    The table (docs/fidelity.md): convolutions and linear layers 2 x MACs (+1 per output for a
    bias); matmul/bmm/mm 2 x output elements x the shared dimension; MultiheadAttention its four
    projections, Q K^T, softmax and the weighted sum; LSTM/GRU/RNN the gate products per step and
    layer; norms, softmax and losses 5 per element; pooling one per window element per output;
    views, copies and dropout at inference 0; every other op (elementwise, activations, dropout
    in training) 1 per output element.
    """
    out_elems = sum(_numel(o) for o in outputs)
    kind = type_name(gm, n)
    if n.op == "call_module":
        m = gm.get_submodule(n.target)
        if isinstance(m, torch.nn.modules.conv._ConvTransposeNd) and inputs:
            per = m.out_channels // m.groups * math.prod(m.kernel_size)
            return 2 * _numel(inputs[0]) * per + (out_elems if m.bias is not None else 0)
        if isinstance(m, torch.nn.modules.conv._ConvNd):
            per = m.in_channels // m.groups * math.prod(m.kernel_size)
            return 2 * out_elems * per + (out_elems if m.bias is not None else 0)
        if isinstance(m, torch.nn.Linear):
            return 2 * out_elems * m.in_features + (out_elems if m.bias is not None else 0)
        if isinstance(m, torch.nn.MultiheadAttention) and len(inputs) >= 3:
            return _attention_flops(m, *inputs[:3])
        if isinstance(m, torch.nn.RNNBase) and inputs:
            return _rnn_flops(m, inputs[0])
        pools = (torch.nn.modules.pooling._MaxPoolNd, torch.nn.modules.pooling._AvgPoolNd)
        if isinstance(m, pools):
            k = m.kernel_size
            window = math.prod(k) if isinstance(k, tuple) else k ** (len(outputs[0].shape) - 2)
            return out_elems * window
        if kind.startswith("Adaptive") and inputs:
            return _numel(inputs[0])
        if isinstance(m, torch.nn.modules.dropout._DropoutNd) and not training:
            return 0
        if kind.startswith(_NORMS):
            return 5 * out_elems
    if kind in ("conv1d", "conv2d", "conv3d") and len(inputs) >= 2:
        w = inputs[1].shape
        return 2 * out_elems * math.prod(w[1:])
    if kind == "linear" and len(inputs) >= 2:
        return 2 * out_elems * inputs[1].shape[-1]
    if kind in _MATMUL and len(inputs) >= 2:
        a = inputs[-2] if kind in ("addmm", "baddbmm") else inputs[0]
        return 2 * out_elems * a.shape[-1]
    if kind in _VIEWS or kind in _COPIES:
        return 0
    if kind in _FIVE:
        return 5 * out_elems
    return out_elems


def type_name(gm, n):
    """An op's type: the module's class name, or the function's or method's name."""
    if n.op == "call_module":
        return type(gm.get_submodule(n.target)).__name__
    if n.op == "call_function":
        if n.target is operator.matmul:
            return "matmul"
        return getattr(n.target, "__name__", str(n.target))
    return str(n.target)


def _target_name(n):
    return n.target if isinstance(n.target, str) else getattr(n.target, "__name__", str(n.target))


# --- the graph document --------------------------------------------------------------------------

def op_name(n):
    """'/<module path>/<node name>' (the module's own path for a call_module node, else the module
    whose forward made the call), or '/<node name>' at the model's top level: what the core's
    ModulePath reads back as the module."""
    scope = n.target if n.op == "call_module" else n.meta.get("dplace_scope", "")
    return f"/{scope}/{n.name}" if scope else f"/{n.name}"


def _is_structural(n):
    """A getitem that picks an element of a tuple, list or dict (not an op; torch.Size included),
    as opposed to one that indexes a tensor (an op)."""
    if n.op != "call_function" or n.target is not operator.getitem:
        return False
    src = n.args[0]
    kind = src.meta.get("type") if isinstance(src, fx.Node) else None
    return isinstance(kind, type) and issubclass(kind, (tuple, list, dict))


class GraphInfo:
    """What one trace yields, beside the dplace-graph/1 dict `doc`.

    node_op: fx node name -> op name, for the nodes that are ops. params: op name -> the
    parameters whose bytes the op holds (each parameter held by one op). refs: fx node name -> its
    value with every tensor an op computed replaced by ("ref", op name, output index).
    """

    def __init__(self, doc, node_op, params, refs):
        self.doc = doc
        self.node_op = node_op
        self.params = params
        self.refs = refs


def _refs(value_meta, op, counter):
    """The node's value with each tensor replaced by (op, output index), in flattening order."""
    if hasattr(value_meta, "shape") and hasattr(value_meta, "stride"):
        counter[0] += 1
        return ("ref", op, counter[0] - 1)
    if isinstance(value_meta, (tuple, list)):
        return [_refs(v, op, counter) for v in value_meta]
    if isinstance(value_meta, dict):
        return {k: _refs(v, op, counter) for k, v in value_meta.items()}
    return None


def ref_leaves(ref):
    if isinstance(ref, tuple) and len(ref) == 3 and ref[0] == "ref":
        return [ref]
    if isinstance(ref, list):
        return [leaf for r in ref for leaf in ref_leaves(r)]
    if isinstance(ref, dict):
        return [leaf for r in ref.values() for leaf in ref_leaves(r)]
    return []


def build_graph(gm, name, training=False, saved=None):
    """The dplace-graph/1 dict of a shape-propagated GraphModule (propagate_shapes first).

    saved: the SavedInfo of record_saved, which says what backward keeps (edges' "saved", ops'
    "saves_output" and "saved_bytes") and which outputs are views; None: every output is a
    tensor of its own, kept until its backward op (the most memory a step can need)."""
    modules = dict(gm.named_modules())
    attr_uses = {}
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            attr_uses[n.name] = len(n.users)
    seen_params = set()
    # state_dict keys (persistent buffers included) by tensor, the first name of a tied one.
    key_of = {}
    model_keys = getattr(gm, "_dplace_state_keys", None)
    for key, t in gm.state_dict(keep_vars=True).items():
        if model_keys is None or key in model_keys:
            key_of.setdefault(id(t), key)
    refs = {}      # fx node name -> refs of its value (ops and structural picks)
    external = {}  # fx node name -> its parameter or None, for inputs and attributes
    ops, edges, node_op, params = [], [], {}, {}

    shared = []  # the current op's parameters that an earlier op holds (tied, shared)

    def fresh(ps):
        out = [p for p in ps if id(p) not in seen_params]
        shared.extend(key_of[id(p)] for p in ps
                      if id(p) in seen_params and id(p) in key_of and key_of[id(p)] not in shared)
        seen_params.update(id(p) for p in out)
        return out

    for n in gm.graph.nodes:
        metas = _tensor_metas(n.meta.get("tensor_meta"))
        if n.op == "placeholder":
            external[n.name] = None
            continue
        if n.op == "output":
            continue
        if n.op == "get_attr":
            value = _get_attr(gm, n.target)
            is_param = isinstance(value, torch.nn.Parameter)
            if not is_param or attr_uses[n.name] <= 1:
                external[n.name] = value if is_param else None
                continue
            # A parameter several ops read is an op of its own, which holds it.
            own = fresh([value])
            op = op_name(n)
            ops.append({"name": op, "type": "Parameter", "flops": 0,
                        "bytes_accessed": _bytes(metas[0]),
                        "param_bytes": sum(p.numel() * p.element_size() for p in own),
                        "outputs": [{"bytes": _bytes(metas[0]), "view_of": None}],
                        "saves_output": False,
                        "parameters": [key_of[id(p)] for p in own if id(p) in key_of]})
            node_op[n.name], params[op] = op, own
            refs[n.name] = ("ref", op, 0)
            continue
        if _is_structural(n):
            src, idx = n.args[0], n.args[1]
            try:
                refs[n.name] = refs[src.name][idx] if src.name in refs else None
            except (KeyError, IndexError, TypeError):
                refs[n.name] = None
            continue
        if not metas:
            continue  # computes no tensor (x.size(0), shape arithmetic): no op
        op = op_name(n)
        shared.clear()
        in_metas, in_bytes, own, buffers = [], 0, [], []
        inputs_seen = set()
        kept = saved.saved_inputs.get(n.name, ()) if saved is not None else ()

        def visit_arg(a):
            nonlocal in_bytes
            am = _tensor_metas(a.meta.get("tensor_meta"))
            in_metas.extend(am)  # by position, repeats kept (attention's q, k, v)
            if a.name in inputs_seen:
                return
            inputs_seen.add(a.name)
            in_bytes += sum(_bytes(m) for m in am)
            if a.name in external:
                if external[a.name] is not None:
                    own.extend(fresh([external[a.name]]))
                elif a.op == "get_attr":  # a buffer: named by its first reader, holds no bytes
                    value = _get_attr(gm, a.target)
                    if id(value) in key_of and id(value) not in seen_params:
                        seen_params.add(id(value))
                        buffers.append(key_of[id(value)])
                return
            for _, producer, index in ref_leaves(refs.get(a.name)):
                edge = {"from": producer, "to": op, "output": index}
                if saved is not None and a.name not in kept:
                    edge["saved"] = False
                edges.append(edge)

        fx.node.map_arg((n.args, n.kwargs), visit_arg)
        if n.op == "call_module":
            own.extend(fresh(list(modules[n.target].parameters())))
        kind = type_name(gm, n)
        out_bytes = [_bytes(m) for m in metas]
        param_bytes = sum(p.numel() * p.element_size() for p in own)
        view = kind in _VIEWS
        entry = {
            "name": op,
            "type": kind,
            "flops": float(node_flops(gm, n, in_metas, metas, training)),
            "bytes_accessed": 0 if view else in_bytes + sum(out_bytes) + param_bytes,
            "param_bytes": param_bytes,
            "outputs": out_bytes,
        }
        named = [key_of[id(p)] for p in own if id(p) in key_of] + buffers
        if named:
            entry["parameters"] = named
        if shared:
            entry["shared_parameters"] = list(shared)
        if saved is not None:
            entry["outputs"] = [_output_entry(b, saved.views.get(n.name, {}).get(k, False), refs)
                                for k, b in enumerate(out_bytes)]
            entry["saves_output"] = n.name in saved.saves_output
            if n.name in saved.backward_factor:
                entry["backward_factor"] = saved.backward_factor[n.name]
            if saved.inner_bytes.get(n.name):
                entry["saved_bytes"] = saved.inner_bytes[n.name]
            if n.name in saved.inner_bytes_cpu:
                entry["saved_bytes_cpu"] = saved.inner_bytes_cpu[n.name]
        ops.append(entry)
        node_op[n.name], params[op] = op, own
        refs[n.name] = _refs(n.meta["tensor_meta"], op, [0])
    if not ops:
        raise _dplace_error(f"model {name} computes nothing that torch.fx can see")
    doc = {"format": "dplace-graph/1", "name": name, "ops": ops, "edges": edges}
    return GraphInfo(doc, node_op, params, refs)


def _output_entry(nbytes, base, refs):
    """An output of "outputs": its bytes, or a view of `base` ((argument node, leaf index); None
    for a parameter's or a model input's memory; False: no view)."""
    if base is False:
        return nbytes
    if base is None:
        return {"bytes": nbytes, "view_of": None}
    leaves = ref_leaves(refs.get(base[0]))
    if base[1] >= len(leaves):
        return {"bytes": nbytes, "view_of": None}  # the argument is no op: a model input
    _, producer, index = leaves[base[1]]
    return {"bytes": nbytes, "view_of": {"op": producer, "output": index}}


def _get_attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj
