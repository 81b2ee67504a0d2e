"""Measured op times of a PyTorch model, and of whole steps (dplace.torch's profiler).

Per-op times come from timed fx interpretation *in context*: each run interprets the whole step
once, node after node as the model would run them, timing each op's call (its forward, and in a
training step its backward and its optimiser update), and an op's time is the median over the runs.
Timing an op alone in a loop would find its inputs and weights in cache every time, which a real
step does not. An op's time includes releasing what it was the last to use; optimisers run at
learning rate 0. What this does not see: the Python glue between ops (the model's forward code),
and work inside autograd's engine that is no op's. docs/fidelity.md says what each choice fixed.
"""

import copy
import statistics
import time

import torch
import torch.fx as fx

from . import _torch_graph as tg
from ._torch_core import error


def _sync(device):
    if device.type == "cuda":  # every GPU: a placed model may run on several
        for i in range(torch.cuda.device_count()):
            torch.cuda.synchronize(i)


def device_kind(device):
    """dplace's device kind of a torch device: "gpu" for CUDA, else its type ("cpu")."""
    device = torch.device(device)
    return "gpu" if device.type == "cuda" else device.type


def make_optimizer(params, optimizer):
    """optimizer: "adam" (the core's memory model: 2 x parameter bytes of state), "sgd" (with
    momentum), or a callable params -> torch.optim.Optimizer.

    The named ones run with learning rate 0: the same work (the update is computed and added),
    and the weights stay the model's, so that every timed step computes on the same numbers.
    Weights that drift apart between two timed copies of a model (a real step's and a profile's)
    can time apart too: an LSTM's backward ran 250 ms in one and 400 ms in the other."""
    if callable(optimizer):
        return optimizer(params)
    if optimizer == "adam":
        return torch.optim.Adam(params, lr=0.0)
    if optimizer == "sgd":
        return torch.optim.SGD(params, lr=0.0, momentum=0.9)
    raise error(f"unknown optimizer '{optimizer}' (adam, sgd or a callable)")


def _to(value, device):
    return fx.node.map_aggregate(
        value, lambda v: v.to(device) if isinstance(v, torch.Tensor) else v)


def _tensors(value):
    out = []
    fx.node.map_aggregate(value, lambda v: out.append(v) if isinstance(v, torch.Tensor) else v)
    return out


def output_grads(outputs, seed=0):
    """Random gradients (fixed seed) for a step's floating-point outputs, in order."""
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(t.shape, generator=gen, dtype=t.dtype).to(t.device)
            for t in _tensors(outputs) if t.is_floating_point()]


def _with_grads(outputs, grads):
    """(tensor, gradient) of the outputs that require grad (grads from output_grads)."""
    floats = [t for t in _tensors(outputs) if t.is_floating_point()]
    return [(t, g) for t, g in zip(floats, grads) if t.requires_grad]


def _is_inplace(gm, n):
    if n.op == "call_module":
        return bool(getattr(gm.get_submodule(n.target), "inplace", False))
    if n.op == "call_method":
        return n.target.endswith("_") and not n.target.endswith("__")
    name = getattr(n.target, "__name__", "")
    return bool(n.kwargs.get("inplace", False)) or (
        getattr(n.target, "__module__", "") == "_operator" and name.startswith("i")
        and name not in ("index", "indexOf", "inv", "invert", "is_", "is_not", "itemgetter"))


class _StepRun:
    """One interpreted step of a traced model, timing every op (the method of the module doc)."""

    def __init__(self, gm, info, device, training, optimizers):
        self.gm, self.info, self.device = gm, info, device
        self.training, self.optimizers = training, optimizers
        self.node_params = {}
        for n in gm.graph.nodes:
            op = info.node_op.get(n.name)
            if op is None:
                continue
            ps = list(gm.get_submodule(n.target).parameters()) if n.op == "call_module" else []
            for a in n.all_input_nodes:
                if a.op == "get_attr" and a.name not in info.node_op:
                    v = tg._get_attr(gm, a.target)
                    if isinstance(v, torch.nn.Parameter):
                        ps.append(v)
            self.node_params[n.name] = [p for p in ps if p.requires_grad]
        # Values are dropped after their last use, as in eager execution: keeping them all would
        # make every op allocate fresh memory (page faults a real step does not pay).
        self.free_after = {}
        seen = set()
        for n in reversed(gm.graph.nodes):
            for a in n.all_input_nodes:
                if a.name not in seen:
                    seen.add(a.name)
                    self.free_after.setdefault(n.name, []).append(a.name)

    def run(self, inputs, grads_out):
        """Seconds per op: forward, backward and update dicts (op name -> s)."""
        fwd, bwd, upd = {}, {}, {}
        env, saved = {}, {}
        placeholders = iter(inputs)
        graph_nodes = list(self.gm.graph.nodes)
        with torch.set_grad_enabled(self.training):
            for n in graph_nodes:
                if n.op == "placeholder":
                    env[n.name] = next(placeholders, None)
                    continue
                if n.op == "output":
                    result = fx.node.map_arg(n.args[0], lambda a: env[a.name])
                    continue
                if n.op == "get_attr":
                    env[n.name] = tg._get_attr(self.gm, n.target)
                    if n.name in self.info.node_op:
                        fwd[self.info.node_op[n.name]] = 0.0
                    continue
                op = self.info.node_op.get(n.name)
                leaves = []
                inplace = self.training and op is not None and _is_inplace(self.gm, n)

                def load(a):
                    v = env[a.name]
                    if not self.training or op is None:
                        return v
                    return self._detach(v, self.info.refs.get(a.name), leaves, inplace)

                args = fx.node.map_arg(n.args, load)
                kwargs = fx.node.map_arg(n.kwargs, load)
                fn = self._callable(n)
                if op is None:  # a structural pick or shape arithmetic: not an op, not timed
                    env[n.name] = fn(*args, **kwargs)
                    for name in self.free_after.get(n.name, ()):
                        del env[name]
                    continue
                # Timed: the call, and the release of the inputs it was the last to use (where a
                # real step frees them), which for large tensors is no small part (munmap).
                _sync(self.device)
                t0 = time.perf_counter()
                out = fn(*args, **kwargs)
                args = kwargs = None
                env[n.name] = out
                for name in self.free_after.get(n.name, ()):
                    del env[name]
                _sync(self.device)
                fwd[op] = time.perf_counter() - t0
                if self.training:
                    saved[n.name] = (op, leaves, out)
                out = None
        if not self.training:
            return fwd, bwd, upd
        self._backward(graph_nodes, env, saved, result, grads_out, bwd)
        for op, opt in self.optimizers.items():
            _sync(self.device)
            t0 = time.perf_counter()
            opt.step()
            _sync(self.device)
            upd[op] = time.perf_counter() - t0
            opt.zero_grad(set_to_none=True)
        return fwd, bwd, upd

    def _callable(self, n):
        if n.op == "call_module":
            return self.gm.get_submodule(n.target)
        if n.op == "call_function":
            return n.target
        return lambda obj, *a, **k: getattr(obj, n.target)(*a, **k)

    @staticmethod
    def _detach(value, ref, leaves, inplace):
        """The op's own copy of an input an op computed: a leaf of autograd, so that the op's
        backward can be run (and timed) on its own; recorded in `leaves` with its producer."""
        if isinstance(value, torch.Tensor):
            if not (isinstance(ref, tuple) and ref and ref[0] == "ref") or not value.requires_grad:
                return value
            leaf = value.detach().requires_grad_()
            leaves.append((leaf, ref[1], ref[2]))
            return leaf.clone() if inplace else leaf
        if isinstance(value, (tuple, list)) and isinstance(ref, list):
            return type(value)(_StepRun._detach(v, r, leaves, inplace) for v, r in zip(value, ref))
        return value

    def _backward(self, graph_nodes, env, saved, result, grads_out, bwd):
        # Gradient arriving at each op output: (op, index) -> tensor; seeded at the step's outputs.
        grad = {}
        by_id = {}
        for n in graph_nodes:
            if saved.get(n.name) is not None:
                op, _, out = saved[n.name]
                for i, t in enumerate(_tensors(out)):
                    by_id[id(t)] = (op, i)
        for t, g in _with_grads(result, grads_out):
            key = by_id.get(id(t))
            if key is not None:
                grad[key] = grad[key] + g if key in grad else g
        for n in reversed(graph_nodes):
            if saved.get(n.name) is None:
                continue
            op, leaves, out = saved.pop(n.name)
            pairs = [(t, grad.pop((op, i))) for i, t in enumerate(_tensors(out))
                     if (op, i) in grad and t.requires_grad]
            params = self.node_params.get(n.name, [])
            wrt = [leaf for leaf, _, _ in leaves] + params
            if not pairs or not wrt:
                bwd[op] = 0.0
                continue
            # Timed as autograd's engine would run this node: its backward, the release of what
            # it saved and of its output gradients, and the accumulation of the gradients it
            # produces (into its producers' inputs and its parameters' .grad).
            _sync(self.device)
            t0 = time.perf_counter()
            gs = torch.autograd.grad([t for t, _ in pairs], wrt, [g for _, g in pairs],
                                     allow_unused=True)
            pairs = out = None
            for (_, producer, index), g in zip(leaves, gs):
                if g is not None:
                    key = (producer, index)
                    grad[key] = grad[key] + g if key in grad else g
            for p, g in zip(params, gs[len(leaves):]):
                if g is not None:
                    p.grad = g if p.grad is None else p.grad + g
            leaves = wrt = gs = None
            _sync(self.device)
            bwd[op] = time.perf_counter() - t0
        # A parameter op (a parameter several ops read) passes its gradient to the parameter.
        for n in graph_nodes:
            if n.op == "get_attr" and n.name in self.info.node_op:
                op = self.info.node_op[n.name]
                bwd[op] = 0.0
                g = grad.pop((op, 0), None)
                p = tg._get_attr(self.gm, n.target)
                if g is not None:
                    p.grad = g if p.grad is None else p.grad + g


class Profile:
    """Measured seconds per op of one model on one device kind.

    kind: dplace device kind ("cpu", "gpu"); device: the torch device; training: whether the
    backward and update times were measured. forward_s / backward_s / update_s: {op name: median
    seconds}. runs: how many interpreted steps the medians are over. step_s: median of whole real
    steps measured alongside (None when not measured).
    """

    def __init__(self, kind, device, training, forward_s, backward_s, update_s, runs, step_s=None):
        self.kind, self.device, self.training = kind, str(device), training
        self.forward_s, self.backward_s, self.update_s = forward_s, backward_s, update_s
        self.runs, self.step_s = runs, step_s

    def total_s(self):
        """Sum of every op's time: a one-device step as the profile sees it."""
        return (sum(self.forward_s.values()) + sum(self.backward_s.values())
                + sum(self.update_s.values()))

    def op_time(self, name):
        """Seconds of the op named as in a (training-expanded) graph, or None."""
        if name.endswith("/grad") and name[:-5] in self.backward_s:
            return self.backward_s[name[:-5]]
        if name.endswith("/update") and name[:-7] in self.update_s:
            return self.update_s[name[:-7]]
        return self.forward_s.get(name)

    def attach_doc(self, doc):
        """A copy of a dplace-graph/1 dict with time_s[kind] set on every op; dplace.Error when
        an op has no time here (a graph of another model, or a training graph and an inference
        profile)."""
        doc = copy.deepcopy(doc)
        for o in doc["ops"]:
            t = self.op_time(o["name"])
            if t is None:
                what = ("a training step's op, and the profile is of inference"
                        if o.get("kind", "forward") != "forward" and not self.training
                        else "not in the profile (a graph of another model?)")
                raise error(f"op '{o['name']}' of graph '{doc.get('name', 'graph')}': {what}")
            times = dict(o.get("time_s") or {})
            times[self.kind] = max(0.0, float(t))
            o["time_s"] = times
        return doc

    def __repr__(self):
        return (f"Profile({self.kind}, {'training' if self.training else 'inference'}, "
                f"{len(self.forward_s)} ops, total {self.total_s() * 1e3:.3f} ms)")


def profile(model, example_inputs, device="cpu", training=False, warmup=2, repeat=10,
            optimizer="adam", leaves=(), steps=False):
    """Profile of `model` on `device` (see the module doc). Training profiles, and profiles on
    another device than the model's, run on a copy of the model; the model's mode is restored.

    steps: also time a real step of the model after each interpreted one (Profile.step_s, their
    median): the two alternate, so that a machine that is slower for a while (other work, a
    neighbour on the host) slows both alike, and their ratio is the method's, not the moment's.
    """
    original, was_training = model, model.training
    stay = device is None  # a placed model: leave every module where it is
    device = _model_device(model) if stay else torch.device(device)
    if training or device != _model_device(model):
        model = copy.deepcopy(model)  # a training step changes weights; a move, their device
    try:
        if not stay:
            model.to(device)
            example_inputs = _to(tuple(example_inputs), device)
        inputs = tuple(example_inputs)
        gm = tg.trace(model, leaves)
        tg.propagate_shapes(gm, inputs)
        info = tg.build_graph(gm, type(original).__name__, training)
        optimizers = {}
        if training:
            for op, ps in info.params.items():
                ps = [p for p in ps if p.requires_grad]
                if ps:
                    optimizers[op] = make_optimizer(ps, optimizer)
        gm.train(training)
        runner = _StepRun(gm, info, device, training, optimizers)
        real = _RealStep(model, inputs, training, optimizer) if steps else None
        grads = None
        if training:
            with torch.no_grad():
                grads = output_grads(gm(*inputs))
        samples, step_samples = ({}, {}, {}), []

        def interpreted(n, keep):
            for _ in range(n):
                times = runner.run(inputs, grads)
                if keep:
                    for acc, t in zip(samples, times):
                        for op, s in t.items():
                            acc.setdefault(op, []).append(s)

        interpreted(warmup, False)
        if real is None:
            interpreted(repeat, True)
        else:
            # Blocks of _BLOCK timed runs of each kind, after one untimed run of that kind:
            # each kind is timed in its own steady state (what one step leaves behind, e.g. the
            # allocator's free memory, changes the next: a real step right after an interpreted
            # one paid page faults the next real step does not), and drift hits both alike.
            for _ in range(warmup):
                real()
            for start in range(0, repeat, _BLOCK):
                n = min(_BLOCK, repeat - start)
                interpreted(1, False)
                interpreted(n, True)
                real()
                step_samples.extend(real() for _ in range(n))
    finally:
        original.train(was_training)
    med = [{op: statistics.median(v) for op, v in acc.items()} for acc in samples]
    step_s = statistics.median(step_samples) if step_samples else None
    return Profile(device_kind(device), device, training, med[0], med[1], med[2], repeat, step_s)


def _model_device(model):
    """Where the model is: its first GPU if any parameter is on one (a placed model may span
    several; timing then synchronises every GPU), else its first parameter's device."""
    devices = [p.device for p in model.parameters()]
    cuda = [d for d in devices if d.type == "cuda"]
    return cuda[0] if cuda else (devices[0] if devices else torch.device("cpu"))


_BLOCK = 3  # timed runs per block when profile() also times real steps


class _RealStep:
    """One real step of a model, timed (seconds): a forward pass under no_grad; or, training, a
    forward pass, backward from fixed random output gradients, an optimiser step and zero_grad.
    Sets the model's mode on each call (the caller restores it)."""

    def __init__(self, model, inputs, training, optimizer):
        self.model, self.inputs, self.training = model, tuple(inputs), training
        self.device = _model_device(model)
        self.grads = None
        self.opt = make_optimizer([p for p in model.parameters() if p.requires_grad],
                                  optimizer) if training else None

    def __call__(self):
        self.model.train(self.training)
        _sync(self.device)
        t0 = time.perf_counter()
        if self.training:
            out = self.model(*self.inputs)
            if self.grads is None:
                self.grads = output_grads(out)
            pairs = _with_grads(out, self.grads)
            torch.autograd.backward([t for t, _ in pairs], [g for _, g in pairs])
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)
        else:
            with torch.no_grad():
                self.model(*self.inputs)
        out = pairs = None
        _sync(self.device)
        return time.perf_counter() - t0


def measure_step(model, example_inputs, training=False, warmup=2, repeat=10, optimizer="adam"):
    """Median seconds of a real step (_RealStep) and the samples; training on a copy."""
    if training:
        model = copy.deepcopy(model)
    was_training = model.training
    try:
        step = _RealStep(model, example_inputs, training, optimizer)
        samples = [step() for _ in range(warmup + repeat)][warmup:]
    finally:
        model.train(was_training)
    return statistics.median(samples), samples
