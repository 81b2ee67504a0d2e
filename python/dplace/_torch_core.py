"""The only place where dplace.torch calls the core module (dplace._dplace, through `dplace`).

dplace.torch builds dplace-graph/1 and dplace-cluster/1 documents in Python and hands them here;
everything it learns back comes through these few calls, so that a change of the core's Python API
is one edit in this file.
"""

import dplace as _dp


Error = _dp.Error


def error(message):
    """The exception dplace.torch raises for bad input: dplace.Error (a ValueError), one line."""
    return _dp.Error(message)


def load_graph(doc, training=False, unit=""):
    """A core graph from a dplace-graph/1 dict; training=True expands it (forward + backward +
    update ops, the core's ExpandTraining)."""
    return _dp.load_graph(doc, training=training, unit=unit)


def graph_json(graph):
    """The core graph as a dplace-graph/1 dict with every field (training ops included)."""
    return graph.to_json()


def is_graph(obj):
    return hasattr(obj, "to_json") and hasattr(obj, "op_names")


def load_cluster(src):
    """A core cluster from a preset name, a path or a dplace-cluster/1 dict (a cluster is kept)."""
    if hasattr(src, "devices") and hasattr(src, "kinds"):
        return src
    return _dp.load_cluster(src)


def device_kinds(cluster):
    """[(device name, kind)] of a cluster, in its order."""
    cluster = load_cluster(cluster)
    return list(zip(cluster.devices, cluster.device_kinds))


def problem(graph, cluster, objective="step"):
    return _dp.Problem(graph, cluster, objective)


def place(problem, placer="m_etf", **kwargs):
    """A Result: .placement {op: device}, .value, .feasible, .devices, ..."""
    return _dp.place(problem, placer, **kwargs)


def simulate(problem, plan):
    """A Result judging a plan ({op: device}, a Result or a plan file path)."""
    return _dp.simulate(problem, plan)


def busy_s(result):
    """{device name: busy seconds} of a Result's step."""
    return {d["name"]: d["busy_s"] for d in result.devices}


def device_map(problem, plan):
    """accelerate's device map ({module path: GPU index or "cpu"}) of a plan."""
    return _dp.device_map(problem, plan)
