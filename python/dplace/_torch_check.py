"""Predicted against measured: dplace.torch.check, the fidelity table of docs/fidelity.md.

For each placement: the core simulates the step on a graph whose ops carry the times profiled on
this machine (predicted), and the model placed by apply() runs for real (measured). Per device,
the simulator's busy time is compared with the sum of that device's op times profiled in the
placed model; what the placed model spends moving tensors is a row of its own ("transfers"), which
the simulator puts on links, not on devices. Imported only by dplace.torch.
"""

import copy

from . import _torch_apply, _torch_core as core, _torch_profile as tp


class Check:
    """rows: dicts {placement, what ("step", a device name, "transfers"), predicted_s,
    measured_s, ratio (predicted / measured, None where either is missing)}. str(): a table."""

    def __init__(self, rows, problem=None, profiles=None, model=None):
        self.rows, self.problem, self.profiles, self.model = rows, problem, profiles, model

    def __str__(self):
        head = f"{'placement':<16} {'what':<10} {'predicted':>11} {'measured':>11} {'pred/meas':>9}"
        lines = [head, "-" * len(head)]
        for r in self.rows:
            lines.append(f"{r['placement']:<16} {r['what']:<10} {_ms(r['predicted_s']):>11} "
                         f"{_ms(r['measured_s']):>11} "
                         f"{'' if r['ratio'] is None else format(r['ratio'], '.3f'):>9}")
        return "\n".join(lines)

    def step(self, placement):
        """(predicted_s, measured_s) of one placement's whole step."""
        for r in self.rows:
            if r["placement"] == placement and r["what"] == "step":
                return r["predicted_s"], r["measured_s"]
        raise KeyError(placement)


def _ms(s):
    return "" if s is None else f"{s * 1e3:.3f} ms"


def _row(label, what, predicted, measured):
    ratio = predicted / measured if predicted is not None and measured else None
    return {"placement": label, "what": what, "predicted_s": predicted, "measured_s": measured,
            "ratio": ratio}


def torch_device_of_kind(kind):
    return "cuda:0" if kind == "gpu" else kind


def complete_plan(placement, op_names):
    """A plan of every op: "<op>/grad" and "<op>/update" missing from `placement` go with <op>."""
    out = dict(placement)
    for name in op_names:
        if name not in out:
            base = name.rsplit("/", 1)[0] if name.endswith(("/grad", "/update")) else None
            if base is None or base not in out:
                raise core.error(f"the plan does not place op '{name}'")
            out[name] = out[base]
    return out


def check(model, example_inputs, cluster, training, placements, warmup, repeat, profiles,
          emulate_transfers, optimizer):
    from . import torch as dt
    cluster = core.load_cluster(cluster if cluster is not None else dt.local_cluster("cpu"))
    devices = core.device_kinds(cluster)
    if profiles is None:
        profiles = [tp.profile(model, example_inputs, torch_device_of_kind(kind), training,
                               warmup, repeat, optimizer, steps=True) for kind in cluster.kinds]
    graph = dt.from_module(model, example_inputs, training, profile=profiles)
    problem = core.problem(graph, cluster)
    names = graph.op_names()
    rows = []
    # The unplaced model on one device of each profiled kind: prediction and real steps taken
    # in the same session, alternating (Profile.step_s).
    for prof in profiles:
        first = next((name for name, kind in devices if kind == prof.kind), None)
        if prof.step_s is not None and first is not None:
            one = core.simulate(problem, {op: first for op in names})
            rows.append(_row(f"model on {prof.kind}", "step", one.value, prof.step_s))
    if placements is None:
        placements = {"one device": {op: devices[0][0] for op in names}}
    if not isinstance(placements, dict):
        raise TypeError("placements must be a dict {label: plan or placer name}, not "
                        f"{type(placements).__name__}")
    for label, plan in placements.items():
        if isinstance(plan, str) and not plan.endswith(".json"):
            plan = core.place(problem, placer=plan)
        placement = complete_plan(_torch_apply.plan_placement(plan), names)
        evaluation = core.simulate(problem, placement)
        placed = _torch_apply.apply(copy.deepcopy(model), placement, devices, None,
                                    emulate_transfers)
        # The placed model's real steps alternate with its in-context profile, whose op times
        # summed per device are the measured side of each device's busy time.
        in_context = tp.profile(placed, example_inputs, None, training, warmup, repeat,
                                optimizer, steps=True)
        rows.append(_row(label, "step", evaluation.value, in_context.step_s))
        per_device = {name: 0.0 for name, _ in devices}
        transfers = 0.0
        for op in set(in_context.forward_s):
            times = [in_context.forward_s.get(op, 0.0), in_context.backward_s.get(op, 0.0),
                     in_context.update_s.get(op, 0.0)]
            if op in placement:
                per_device[placement[op]] += times[0]
                per_device[placement.get(op + "/grad", placement[op])] += times[1]
                per_device[placement.get(op + "/update", placement[op])] += times[2]
            else:  # a move apply() inserted (the model's inputs to their first device too)
                transfers += sum(times)
        busy = core.busy_s(evaluation)
        for name, _ in devices:
            if busy.get(name) or per_device[name]:
                rows.append(_row(label, name, busy.get(name), per_device[name]))
        if transfers:
            rows.append(_row(label, "transfers", None, transfers))
    return Check(rows, problem, profiles, model)
