"""dplace.torch: place a PyTorch model's operators, run the plan, and check the prediction.

    import dplace, dplace.torch as dt
    prof = dt.profile(model, (x,), training=True)             # measured op times, this machine
    g = dt.from_module(model, (x,), training=True, profile=prof)
    problem = dplace.Problem(g, dplace.load_cluster(dt.local_cluster("cpu+cpu")), "step")
    r = dplace.place(problem, "m_etf")
    placed = dt.apply(model, r, cluster=problem.cluster)      # each op on its device
    dt.measure(model, (x,), plan=r, cluster=problem.cluster, training=True)  # a real step, s
    print(dt.check(model, (x,), training=True))               # predicted against measured

The model is read with torch.fx, not by ONNX export: fx keeps module paths first-class (every op
is named "/<module path>/<node>", which the device_map export reads back as the module), needs no
exporter (torch.onnx and its opset limits), and the graph dplace places is the very graph apply()
runs, so a plan's op names always match the model. What fx cannot trace (data-dependent control
flow) it refuses, with the fix (keep such modules whole: leaves=[...]).

torch is imported when a function runs, not when this module is imported; `import dplace` never
imports torch. Everything here calls the core only through _torch_core.py. docs/fidelity.md says
how well predictions match measured steps on a CPU.
"""

# (and the classes Profile and Check, imported with torch on first use: see __getattr__)
__all__ = ["from_module", "graph_dict", "profile", "attach", "local_cluster",
           "keep_freed_memory", "apply", "measure", "device_map", "check"]


def _graph():
    from . import _torch_graph
    return _torch_graph


def _core():
    from . import _torch_core
    return _torch_core


def _check_inputs(model, example_inputs):
    import torch
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, not {type(model).__name__}")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, (tuple, list)):
        raise TypeError("example_inputs must be a tensor or a tuple of the model's inputs, not "
                        f"{type(example_inputs).__name__}")
    return tuple(example_inputs)


def graph_dict(model, example_inputs, name=None, training=False, leaves=()):
    """The model's forward graph as a dplace-graph/1 dict (what from_module loads).

    One op per fx node that computes a tensor, named "/<module path>/<node name>" for a module's
    call and "/<module path of the caller>/<node name>" for a function or method (at the top level
    "/<node name>"); type: the module's class or the function's name; FLOPs from the shapes the
    example inputs give (table in docs/fidelity.md); bytes_accessed: inputs, outputs and
    parameters (0 for views); param_bytes: the module's parameters, each counted once; outputs:
    each tensor the node returns (a tuple gives several, and getitem consumers read the right one),
    views and in-place results marked as aliases of their base. What a training step's backward
    keeps (edges' "saved", "saves_output", "saved_bytes") is recorded from autograd itself: one
    training-mode forward under saved_tensors_hooks, on the meta device (no memory, no time, the
    model untouched) or, where an op has no meta kernel, on a copy of the model.
    Inputs, attributes and shape arithmetic (x.size(0)) are no ops. `leaves`: module classes to
    keep whole (not traced into). `training` only changes dropout's FLOPs: the expansion into a
    training step is the core's (from_module).
    """
    example_inputs = _check_inputs(model, example_inputs)
    tg = _graph()
    try:
        gm = tg.trace(model, leaves)
    except _core().Error:
        # What fx cannot trace symbolically (arithmetic and control flow on values, factories
        # sized by a traced length) runs as it is written: the aten ops it runs are the graph.
        from . import _torch_record
        doc = _torch_record.graph_dict(model, example_inputs, name or type(model).__name__)
    else:
        tg.propagate_shapes(gm, example_inputs)
        saved = tg.record_saved(gm, example_inputs)
        doc = tg.build_graph(gm, name or type(model).__name__, training, saved).doc
    # The batch: the first dimension of the first tensor input (the fit report's largest batch
    # and data-parallel lines need it).
    first = next((x for x in example_inputs if hasattr(x, "shape") and len(x.shape) > 0), None)
    if first is not None and first.shape[0] > 0:
        doc["batch"] = int(first.shape[0])
    return doc


def from_module(model, example_inputs, training=False, name=None, profile=None, leaves=(),
                unit=""):
    """A dplace graph of `model` run on `example_inputs` (graph_dict, loaded by the core).

    training: the core expands it into a training step (ops "<op>/grad", "<op>/update").
    unit: what placers move, as load_graph's unit: "blocks" keeps each repeated block whole (a
    pipeline's units, docs/pipelines.md); "module:64" keeps every module that has no module
    inside it whole (what a device map needs, with Problem(..., runtime="eager")).
    profile: a Profile, or a list of them (one per device kind), whose measured times are set
    as every op's time_s (forward, backward and update ops). Raises dplace.Error for inputs that
    do not fit the model or a model fx cannot trace, TypeError for a model that is no nn.Module.
    """
    core = _core()
    doc = graph_dict(model, example_inputs, name, training, leaves)
    profiles = [] if profile is None else (list(profile) if isinstance(profile, (list, tuple))
                                           else [profile])
    if not training:
        for p in profiles:
            doc = p.attach_doc(doc)
        return core.load_graph(doc, unit=unit)
    g = core.load_graph(doc, training=True, unit=unit)
    if not profiles:
        return g
    doc = core.graph_json(g)
    for p in profiles:
        doc = p.attach_doc(doc)
    return core.load_graph(doc)


def profile(model, example_inputs, device="cpu", training=False, warmup=2, repeat=10,
            optimizer="adam", leaves=(), steps=False):
    """Measured op times of `model` on `device` (a Profile): each op's forward time and, for
    training, its backward time (torch.autograd.grad of its outputs with respect to its inputs
    and parameters) and its optimiser update time (optimizer: "adam", "sgd" or a callable
    params -> torch.optim.Optimizer, one per op with parameters), timed in context: `repeat`
    interpreted steps after `warmup`, the median per op. device=None: where the model is (an
    applied, multi-device model). torch's thread count is the caller's: fix it
    (torch.set_num_threads) for stable numbers. Training runs on a copy of the model.
    steps: also time a real step after each interpreted one (Profile.step_s, the median), so
    that prediction and reality are measured in the same moments of a noisy machine."""
    from . import _torch_profile
    example_inputs = _check_inputs(model, example_inputs)
    return _torch_profile.profile(model, example_inputs, device, training, warmup, repeat,
                                  optimizer, leaves, steps)


def attach(graph, *profiles):
    """`graph` (a core graph or a dplace-graph/1 dict) with each profile's times set as time_s
    of its ops; returns the same kind as given. Training graphs: get them from the core
    (g.to_json() has the "<op>/grad" and "<op>/update" ops) and attach here."""
    core = _core()
    is_core = core.is_graph(graph)
    doc = core.graph_json(graph) if is_core else graph
    for p in profiles:
        doc = p.attach_doc(doc)
    return core.load_graph(doc) if is_core else doc


def local_cluster(devices="cpu", name=None):
    """This machine as a dplace-cluster/1 dict: devices "cpu", "cpu+cpu" (two CPU devices on the
    same cores, for what transfers cost) or "cpu+gpu" (when torch.cuda.is_available()). Memory
    from /proc/meminfo; peak FLOP/s and memory bandwidth from a short matmul and copy (only the
    roofline's fallback: profiled ops carry times); links from measured copies."""
    from . import _torch_machine
    return _torch_machine.local_cluster(devices, name)


def keep_freed_memory():
    """Make glibc's malloc keep freed memory for reuse (process-wide; call first). Large CPU
    steps then stop faulting fresh pages in every step, which a profile over-counts; see
    docs/fidelity.md. True where it applied."""
    from . import _torch_machine
    return _torch_machine.keep_freed_memory()


def _cluster_devices(cluster):
    """[(name, kind)] of a cluster (core cluster, preset name, path or dict), or None."""
    return None if cluster is None else _core().device_kinds(cluster)


def apply(model, plan, cluster=None, torch_devices=None, emulate_transfers=False, leaves=()):
    """`model` run as `plan` places it: an fx GraphModule in which each module and parameter is
    on its op's device and each tensor crossing devices is moved by an explicit Tensor.to (once
    per destination device), so that functions (a residual add) are placed too, not only modules.

    plan: a dplace Result, {op name: device name}, a dplace-plan/1 dict or file, or an
    accelerate-style device map ({module path: GPU index or "cpu"}, e.g. from device_map()).
    cluster: the plan's cluster (core cluster, preset, path or dict): its kinds map devices to
    torch ("cpu" -> cpu, "gpu" -> cuda:<index among its GPUs>); None: from the device names.
    torch_devices: {device name or kind: torch device} for others. emulate_transfers: where two
    plan devices are one torch device (two "cpu"), copy what crosses (what the link models).
    The model's submodules are moved (as accelerate's dispatch_model does) and shared with the
    result. Raises dplace.Error for a plan of another model (op names it does not have).
    """
    from . import _torch_apply
    _check_inputs(model, ())
    return _torch_apply.apply(model, plan, _cluster_devices(cluster), torch_devices,
                              emulate_transfers, leaves)


def measure(model, example_inputs, plan=None, training=False, warmup=2, repeat=10, cluster=None,
            torch_devices=None, emulate_transfers=False, optimizer="adam"):
    """Median seconds of a real step of `model` (or of a copy of it placed by `plan`, see
    apply): inference is a forward pass in eval mode without grad; training is train mode, a
    forward pass, backward from fixed random output gradients, an optimiser step and zero_grad.
    Training runs on a copy: the model's weights are left as they were."""
    import copy
    from . import _torch_profile
    example_inputs = _check_inputs(model, example_inputs)
    if plan is not None:
        model = apply(copy.deepcopy(model), plan, cluster, torch_devices, emulate_transfers)
    median, _ = _torch_profile.measure_step(model, example_inputs, training, warmup, repeat,
                                            optimizer)
    return median


def device_map(model, plan, problem=None):
    """accelerate's device map of a plan ({module path: GPU index or "cpu"}), from the core's
    dplace.device_map, with every key checked to be model.get_submodule or get_parameter path
    and every state_dict key covered (the key itself or a module key before it), as accelerate's
    dispatch requires: another name of a tied tensor is mapped where the tensor is, a parameter
    the traced path never reads (a branch not taken) to the map's first device.

    problem: the dplace.Problem the plan places (None: the Result's own, when it has one)."""
    _check_inputs(model, ())
    problem = problem if problem is not None else getattr(plan, "problem", None)
    if problem is None:
        raise ValueError("device_map needs the plan's dplace.Problem: device_map(model, plan, "
                         "problem)")
    out = _core().device_map(problem, plan)
    for key in out:
        if key == "":
            continue
        try:
            model.get_submodule(key)
        except AttributeError:
            try:
                model.get_parameter(key)
            except AttributeError:
                raise _core().error(f"device map key '{key}' is no module or parameter of "
                                    f"{type(model).__name__} (a plan of another model?)") from None
    _complete(model, out, problem)
    missing = [k for k in model.state_dict() if not _covered(k, out)]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise _core().error(f"device map covers no key before state_dict key(s) "
                            f"{', '.join(missing[:3])}{more} of {type(model).__name__} "
                            "(a plan of another model?)")
    return out


def dispatch(model, device_map):
    """`model` run as accelerate's dispatch_model runs `device_map`, emulated on this CPU: each
    mapped module with its parameters and buffers on its device, the tensors a mapped module is
    given moved (copied) to its device at its entry, the outputs moved back to where the first
    input is, and every other op run where its inputs are: a torch function whose tensors would
    be on two devices raises eager PyTorch's "Expected all tensors to be on the same device".
    Checks on one machine, before any GPU is rented, that a device map runs, and what its step
    takes (every device is this CPU, so the step is sequential: what dplace predicts for a
    device map on CPU devices, runtime "eager"). The first call runs under the checks; later
    calls repeat its copies without them (their Python cost is not the runtime's), so time
    those. The model is modified in place (hooks, tags); returns the dispatched module."""
    from . import _torch_dispatch
    _check_inputs(model, ())
    if not isinstance(device_map, dict):
        raise TypeError("dispatch: device_map must be a dict {module path: device}")
    return _torch_dispatch.dispatch(model, device_map)


def _complete(model, device_map, problem):
    """Covers, as accelerate needs every state_dict key covered, the keys a plan cannot name:
    another name of a tied tensor (T5's encoder.embed_tokens.weight is shared.weight) goes where
    that tensor is mapped, and a parameter the traced path never reads (a branch not taken) with
    the map's first device. A key the graph names but the map leaves out stays uncovered."""
    if not device_map:
        return
    _split_around_shared_modules(model, device_map)
    state = model.state_dict(keep_vars=True)
    named = set()
    for op in problem.graph.to_json()["ops"]:
        named.update(op.get("parameters", ()))
        named.update(op.get("shared_parameters", ()))
    placed = {}  # tensor id -> device of a covered name
    for k, t in state.items():
        if _covered(k, device_map):
            placed.setdefault(id(t), _device_of_key(k, device_map))
    first = next(iter(device_map.values()))
    for k, t in state.items():
        if _covered(k, device_map):
            continue
        if id(t) in placed:
            device_map[k] = placed[id(t)]
        elif k not in named:
            device_map[k] = first


def _split_around_shared_modules(model, device_map):
    """A module registered under several names (T5's shared embedding is "shared",
    "encoder.embed_tokens" and "decoder.embed_tokens") is one module on one device: each key
    whose subtree holds it under another name on another device is replaced by its children
    (and its own tensors), down to that name, which gets the module's device."""
    names = {}
    for name, m in model.named_modules(remove_duplicate=False):
        names.setdefault(id(m), []).append(name)
    for aliases in names.values():
        if len(aliases) < 2:
            continue
        keyed = [(_covering_key(a, device_map), a) for a in aliases]
        deepest = max((k for k in keyed if k[0] is not None),
                      key=lambda k: k[0].count(".") + (k[0] != ""), default=None)
        if deepest is None:
            continue
        device = device_map[deepest[0]]
        for key, alias in keyed:
            while key is not None and key != alias and device_map[key] != device:
                _expand(model, device_map, key)
                key = _covering_key(alias, device_map)
            if key is None or (key != alias and device_map[key] != device):
                device_map[alias] = device
            elif key == alias:
                device_map[alias] = device


def _covering_key(name, device_map):
    """The deepest key of the map that is `name` or a module above it, or None."""
    parts = name.split(".") if name else []
    for i in range(len(parts), -1, -1):
        key = ".".join(parts[:i])
        if key in device_map:
            return key
    return None


def _expand(model, device_map, key):
    """Replaces module key `key` by its children and its own parameters and buffers."""
    device = device_map.pop(key)
    module = model.get_submodule(key) if key else model
    prefix = f"{key}." if key else ""
    for child, _ in module.named_children():
        device_map[prefix + child] = device
    for own in list(module._parameters) + list(module._buffers):
        if getattr(module, own, None) is not None:
            device_map[prefix + own] = device


def _device_of_key(key, device_map):
    """The device the deepest map key covering `key` gives it."""
    parts = key.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in device_map:
            return device_map[".".join(parts[:i])]
    return device_map[""]


def _covered(key, device_map):
    """Whether a state_dict key is placed by a device map: "" places all, a module key its
    subtree, a parameter key itself."""
    if "" in device_map or key in device_map:
        return True
    parts = key.split(".")
    return any(".".join(parts[:i]) in device_map for i in range(1, len(parts)))


def check(model, example_inputs, cluster=None, training=False, placements=None, warmup=2,
          repeat=10, profiles=None, emulate_transfers=True, optimizer="adam"):
    """Predicted against measured step time: a Check (rows, and str() a table).

    cluster: None for local_cluster("cpu"). Profiles (measured here, one per device kind of
    the cluster, unless given) give every op its time, and time real steps of the model between
    their runs: the first rows ("model on <kind>") are the one-device prediction against those.
    Then the core simulates each placement (placements: {label: plan or placer name}; None:
    everything on the first device) and the placed model (apply) is run: real steps alternating
    with an in-context profile, so that each device's predicted busy time is compared with the
    measured sum of its ops' times, and what the moves cost ("transfers") apart.
    """
    from . import _torch_check
    example_inputs = _check_inputs(model, example_inputs)
    return _torch_check.check(model, example_inputs, cluster, training, placements, warmup,
                              repeat, profiles, emulate_transfers, optimizer)


def __getattr__(name):
    """Profile and Check, the classes, are imported with torch on first use (PEP 562)."""
    if name == "Profile":
        from ._torch_profile import Profile
        return Profile
    if name == "Check":
        from ._torch_check import Check
        return Check
    raise AttributeError(f"module 'dplace.torch' has no attribute '{name}'")
