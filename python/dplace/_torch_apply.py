"""A plan applied to a PyTorch model: each op on its device, tensors moved where they cross.

The model is traced with torch.fx (the same trace that named the ops, so a plan's op names are
the trace's) and rewritten into a GraphModule in which every module and parameter sits on its op's
device and every tensor that crosses to another device is moved once per destination by an explicit
call (dplace's own semantics: a tensor crosses once per destination device). Explicit moves, not
forward hooks, because a plan places functions too (a residual add, a flatten), which hooks on
modules cannot reach. Imported only by dplace.torch.
"""

import json

import torch
import torch.fx as fx

from . import _torch_graph as tg
from ._torch_core import error


def move_to(value, device):
    """A transfer: every tensor in `value` moved to `device` (a no-op for one already there)."""
    return fx.node.map_aggregate(
        value, lambda v: v.to(device) if isinstance(v, torch.Tensor) else v)


def copy_transfer(value):
    """An emulated transfer between two plan devices that are one torch device: a real copy."""
    return fx.node.map_aggregate(
        value, lambda v: v.clone() if isinstance(v, torch.Tensor) else v)


def plan_placement(plan):
    """{op name: device name} of a Result, a {op: device} dict, a dplace-plan/1 dict or file."""
    if hasattr(plan, "placement") and isinstance(plan.placement, dict):
        return dict(plan.placement)
    if isinstance(plan, str):
        try:
            with open(plan) as f:
                plan = json.load(f)
        except (OSError, ValueError) as e:
            raise error(f"{plan}: cannot read the plan: {tg._first_line(e)}") from None
    if isinstance(plan, dict) and isinstance(plan.get("placement"), dict):
        return dict(plan["placement"])
    if isinstance(plan, dict):
        return dict(plan)
    raise TypeError(f"a plan is a dplace Result, a dict or a plan file, not {type(plan).__name__}")


def is_device_map(placement):
    """True for an accelerate-style device map ({module path: GPU index or device}), as opposed
    to an op-level plan, whose op names start with '/'."""
    return bool(placement) and not any(k.startswith("/") for k in placement)


def torch_devices(names, kinds, overrides=None):
    """{plan device name: torch device}: "cpu" kinds -> cpu, "gpu" kinds -> cuda:<index among the
    gpus, in the cluster's order>; `overrides` maps a device name or a kind to a torch device."""
    overrides = overrides or {}
    out, gpus = {}, 0
    for name, kind in zip(names, kinds):
        if name in overrides:
            out[name] = torch.device(overrides[name])
        elif kind in overrides:
            out[name] = torch.device(overrides[kind])
        elif kind == "cpu":
            out[name] = torch.device("cpu")
        elif kind == "gpu":
            out[name] = torch.device("cuda", gpus)
        else:
            raise error(f"device '{name}' is of kind '{kind}', which has no torch device: "
                        f"pass torch_devices={{'{kind}': ...}}")
        gpus += kind == "gpu"
    for name, dev in out.items():
        if dev.type == "cuda" and (not torch.cuda.is_available()
                                   or dev.index >= torch.cuda.device_count()):
            raise error(f"the plan puts ops on '{name}' ({dev}), and torch sees "
                        f"{torch.cuda.device_count() if torch.cuda.is_available() else 0} GPUs")
    return out


def guess_kinds(names):
    """Device kinds from names when no cluster is given: 'gpu…'/'cuda…' -> gpu, else cpu."""
    return ["gpu" if n.startswith(("gpu", "cuda")) else "cpu" for n in names]


def _module_of(node):
    return node.target if node.op == "call_module" else node.meta.get("dplace_scope", "")


def node_devices(gm, placement, devices):
    """{fx node name: torch device} for the nodes the plan places (device map or op plan)."""
    out = {}
    call_nodes = [n for n in gm.graph.nodes if n.op in ("call_module", "call_function",
                                                       "call_method", "get_attr")]
    if is_device_map(placement):
        for n in call_nodes:
            path = _module_of(n) if n.op != "get_attr" else n.target
            while True:
                if path in placement:
                    out[n.name] = devices(placement[path])
                    break
                if not path:
                    break
                path = path.rpartition(".")[0]
        return out
    names = {tg.op_name(n): n for n in call_nodes}
    forward = {k: v for k, v in placement.items() if not k.endswith(("/grad", "/update"))}
    unknown = [k for k in forward if k not in names]
    if unknown:
        raise error(f"the plan places op '{unknown[0]}', which {type(gm).__name__} does not have "
                    f"({len(unknown)} such ops: a plan of another model?)")
    for n in call_nodes:
        op = tg.op_name(n)
        if op in forward:
            out[n.name] = devices(forward[op])
        elif n.op == "call_module":
            raise error(f"the plan does not place op '{op}' (module '{n.target}')")
    return out


def apply(model, plan, cluster_devices=None, overrides=None, emulate_transfers=False, leaves=()):
    """A GraphModule running `model` as `plan` places it (see the module doc).

    plan: a Result, {op: device name}, a dplace-plan/1 dict or file, or an accelerate-style
    device map ({module path: GPU index / "cpu" / torch device}). cluster_devices: [(name, kind)]
    of the plan's cluster (None: kinds guessed from the names). The model's own submodules and
    parameters are moved (as accelerate's dispatch_model does); the GraphModule shares them.
    emulate_transfers: where two plan devices are one torch device, a crossing tensor is copied.
    """
    gm = tg.trace(model, leaves)
    placement = plan_placement(plan)
    if not placement:
        raise error("the plan places no op")
    if is_device_map(placement):
        where = node_devices(gm, placement, lambda v: torch.device("cuda", v)
                             if isinstance(v, int) else torch.device(v))
        return _rewrite(gm, where, {}, emulate_transfers)
    names = (sorted(set(placement.values())) if cluster_devices is None
             else [d for d, _ in cluster_devices])
    kinds = guess_kinds(names) if cluster_devices is None else [k for _, k in cluster_devices]
    missing = sorted(set(placement.values()) - set(names))
    if missing:
        raise error(f"the plan names device '{missing[0]}', which the cluster does not have")
    mapping = torch_devices(names, kinds, overrides)
    where = node_devices(gm, placement, mapping.__getitem__)
    node_of = {tg.op_name(n): n.name for n in gm.graph.nodes}
    plan_dev = {node_of[op]: dev for op, dev in placement.items() if op in node_of}
    return _rewrite(gm, where, plan_dev, emulate_transfers)


def _rewrite(gm, where, plan_dev, emulate_transfers):
    # Modules go to their first call's device; a later call on another device runs there too
    # (its weights cannot be in two places).
    module_dev = {}
    for n in gm.graph.nodes:
        if n.op == "call_module" and n.name in where:
            module_dev.setdefault(n.target, where[n.name])
    for n in gm.graph.nodes:
        if n.op == "call_module" and n.target in module_dev:
            where[n.name] = module_dev[n.target]
    for target, dev in module_dev.items():
        gm.get_submodule(target).to(dev)
    graph = fx.Graph()
    env, dev_of, plan_of, moved = {}, {}, {}, {}
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            users = [u for u in n.users if u.name in where]
            dev = where.get(n.name) or (where[users[0].name] if users else None)
            if dev is not None:
                _move_attr(gm, n.target, dev)
            dev_of[n.name], plan_of[n.name] = dev, plan_dev.get(n.name)
        dev = where.get(n.name)
        pdev = plan_dev.get(n.name)
        if dev is None and n.op not in ("placeholder", "output", "get_attr"):
            # Not placed (a structural pick, shape arithmetic): where its first input is.
            ins = [a for a in n.all_input_nodes if dev_of.get(a.name) is not None]
            dev = dev_of[ins[0].name] if ins else None
            pdev = plan_of.get(ins[0].name) if ins else None

        def arg(a, dev=dev, pdev=pdev):
            src = env[a.name]
            if dev is None or a.op == "get_attr":
                return src
            if a.op == "placeholder":
                key = (a.name, str(dev))
                if key not in moved:
                    moved[key] = graph.call_function(move_to, (src, dev))
                return moved[key]
            a_dev, a_pdev = dev_of.get(a.name), plan_of.get(a.name)
            if a_dev is None or (a_dev == dev and (a_pdev == pdev or not emulate_transfers)):
                return src
            key = (a.name, str(dev), pdev if emulate_transfers else None)
            if key not in moved:
                if a_dev == dev:
                    moved[key] = graph.call_function(copy_transfer, (src,))
                else:
                    moved[key] = graph.call_function(move_to, (src, dev))
                moved[key].meta["dplace_transfer"] = True
                moved[key].meta["dplace_scope"] = n.meta.get("dplace_scope", "")
            return moved[key]

        new = graph.node_copy(n, arg)
        new.meta = dict(n.meta)
        env[n.name] = new
        dev_of[n.name], plan_of[n.name] = dev, pdev
        if dev is not None:
            new.meta["dplace_device"] = str(dev)
        if pdev is not None:
            new.meta["dplace_plan_device"] = pdev
    return fx.GraphModule(gm, graph, type(gm).__name__)


def _move_attr(gm, target, device):
    owner_path, _, name = target.rpartition(".")
    owner = gm.get_submodule(owner_path) if owner_path else gm
    value = getattr(owner, name)
    if isinstance(value, torch.nn.Parameter):
        value.data = value.data.to(device)
    elif isinstance(value, torch.Tensor):
        setattr(owner, name, value.to(device))
