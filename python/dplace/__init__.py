"""dplace from Python: place the operators of a deep-learning graph on devices.

The same run service as the ``dplace`` command line, with the same options, budgets, outputs and
one-line error messages (raised as :class:`dplace.Error`, a ``ValueError``)::

    import dplace
    problem = dplace.load_problem("models/resnet50.onnx", "v100x8-nvlink", training=True)
    results = dplace.place_all(problem, ["m_etf", "mcmc"], time_limit=5)
    print(dplace.table(problem, results))
    dplace.write_plan("plan.json", problem, results[1])

``dplace.torch`` turns a PyTorch module into a graph, profiles it, applies a plan and measures it
(it imports torch when used); ``dplace.env.PlacementEnv`` is the learning layer's environment for a
policy of your own.
"""

from __future__ import annotations

import os as _os
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from ._dplace import (  # noqa: F401  (re-exported)
    Cluster,
    Error,
    Graph,
    Problem,
    Result,
    deploy,
    device_map,
    fit_report,
    load_cluster,
    load_graph,
    pipeline,
    placers,
    presets,
    simulate,
    table,
    write_device_map,
    write_plan,
    write_report,
    write_stages,
    write_trace,
)
from . import _dplace

__version__: str = _dplace.__version__  # the project's version, as `dplace --version` prints it

__all__ = [
    "Cluster", "Error", "Graph", "Problem", "Result", "deploy", "device_map", "fit_report",
    "load_cluster", "load_graph",
    "load_problem", "pipeline", "place", "place_all", "placers", "plan", "presets", "simulate",
    "table",
    "train",
    "write_device_map", "write_plan", "write_report", "write_stages", "write_trace",
]

PathLike = Union[str, "_os.PathLike[str]"]


def load_problem(graph: Union[PathLike, Mapping[str, Any], Graph],
                 cluster: Union[str, PathLike, Mapping[str, Any], Cluster, None] = None,
                 *, objective: str = "", training: bool = False, free_gradients: bool = False,
                 dtype: str = "", shapes: Sequence[str] = (), unit: str = "") -> Problem:
    """A graph (file, dplace-graph/1 dict or Graph) on a cluster (preset, file, dict or Cluster).

    The keyword arguments are the command line's ``--training``, ``--free-gradients``,
    ``--dtype``, ``--shapes`` and ``--unit``; ``cluster`` may be None when the graph's file
    defines its machine (the NeurIPS 2020 paper's and Piper's inputs).
    """
    if not isinstance(graph, Graph):
        graph = load_graph(graph, training=training, free_gradients=free_gradients, dtype=dtype,
                           shapes=list(shapes), unit=unit)
    elif training or free_gradients or dtype or shapes or unit:
        raise TypeError("load_problem: graph options apply to a file or dict, not to a loaded "
                        "Graph (give them to load_graph)")
    return Problem(graph, cluster, objective)


def place_all(problem: Problem, placers: Union[str, Iterable[str], None] = None, *,
              options: Union[Mapping[str, Any], Sequence[str], None] = None, seed: int = 1,
              time_limit: float = 0.0, total_time_limit: float = 0.0, evaluations: int = 0,
              start: Any = None, coarsen: int = 2000, robust: int = 0,
              robust_objective: str = "", robust_seed: int = 1,
              robust_spread: float = 0.1, measure: Any = None) -> list:
    """Runs each placer (a name, a list, or None/"all": every placer of the objective).

    ``options`` are the command line's ``--opt`` values, ``{"mcmc.chains": 2}`` or
    ``["mcmc.chains=2"]``; ``time_limit`` (seconds) and ``evaluations`` bound each placer (0: its
    own default); ``total_time_limit`` (seconds, 0: none) is shared by all of them as the command
    line's ``--total-time-limit`` shares it (the time left over the placers left); ``start`` is a plan the searches begin from (``--plan``); ``robust`` K judges
    every placement also on K seeded variants of the step model (``--robust``, with
    ``--robust-objective worst|median|qQ`` making the searches minimise that, ``--robust-seed``,
    ``--robust-spread``; docs/fidelity.md): ``Result.robust`` then has the values. ``measure``, a
    callable taking a plan ({op name: device name}) and returning the seconds of a real step
    (e.g. ``lambda plan: dplace.torch.measure(model, inputs, plan=plan, cluster=...)``), makes the
    searches search by measured steps, each measurement one evaluation (docs/learned.md,
    "Measured steps"); ``Result.measured`` is then the result's own measured step. Returns one
    :class:`Result` per placer, in order, each with the best lower bound any of them proved;
    :func:`deploy` picks the plan ``dplace place`` would write.
    """
    if isinstance(placers, str) and placers != "all":
        placers = [placers]
    elif placers is not None and not isinstance(placers, str):
        placers = list(placers)
    return _dplace.place_all(problem, placers, options=_options(options), seed=seed,
                             time_limit=time_limit, total_time_limit=total_time_limit,
                             evaluations=evaluations, start=start,
                             coarsen=coarsen, robust=robust, robust_objective=robust_objective,
                             robust_seed=robust_seed, robust_spread=robust_spread,
                             measure=measure)


def place(problem: Problem, placer: str = "portfolio", **kwargs: Any) -> Result:
    """Runs one placer (default: the portfolio); keyword arguments as :func:`place_all`."""
    if not isinstance(placer, str):
        raise TypeError("place: placer must be a name; use place_all for several")
    return place_all(problem, [placer], **kwargs)[0]


def _options(options: Union[Mapping[str, Any], Sequence[str], None]) -> Any:
    if options is None or isinstance(options, Mapping):
        return options
    if isinstance(options, str):
        return [options]
    return list(options)


def train(graphs: Union[PathLike, Sequence[PathLike]], clusters: Union[str, Sequence[str]],
          **options: Any) -> dict:
    """Trains a learned placer's policy, as ``dplace train`` does (docs/learned.md).

    ``graphs``: graph files or folders of them (each graph on each of ``clusters``, presets or
    cluster files). ``options`` are the command's flags, underscored: ``method`` (placeto,
    colocrl, hdp, gdp), ``out`` (the policy file), ``checkpoint``, ``resume``, ``init``, ``log``,
    budgets (``updates``, ``evaluations``, ``seconds``), ``episodes``, ``samples``, ``seed``,
    ``hidden``, ``lr``, ``lr_end``, ``algorithm``, ``clip``, ``epochs``, ``entropy``,
    ``discount``, ``max_grad_norm``, ``max_units``, ``groups``, ``training``, imitation
    (``imitate``, ``labels``, ``relabel``, ``improving``, ``perturb``), ``mixed_starts``, and
    ``verbose`` (a progress line per update on stderr). ``hidden``, ``lr``, ``max_grad_norm`` and
    ``algorithm`` not given are the method's. Every output is checked against every input before
    any work. Returns ``{"updates", "episodes", "evaluations", "seconds", "problems", "hidden",
    "lr", "algorithm", "curve"}``; raises :class:`Error` naming the option, and
    ``KeyboardInterrupt`` on Ctrl-C (no more updates, nothing written)."""
    if not hasattr(_dplace, "train"):
        raise Error("train: this build of dplace has no LibTorch (the learned placers)")
    def names(x: Any) -> list:
        return [_os.fspath(x)] if isinstance(x, (str, _os.PathLike)) else [_os.fspath(v) for v in x]
    return _dplace.train(names(graphs), names(clusters), **options)


def plan(model: PathLike, cluster: str, *, global_batch: int, seq_len: Optional[int] = None,
         dtype: str = "bf16", fix: Union[Mapping[str, Any], str, None] = None,
         tp_across_nodes: bool = False, flash_attention: bool = True,
         exports: Optional[Mapping[str, PathLike]] = None, time_limit: Optional[float] = None,
         seed: int = 1, shapes: Sequence[str] = ()) -> dict:
    """Plans a training job as `dplace plan` does (docs/planning.md).

    model: a Hugging Face config.json (seq_len required), or any graph dplace reads (an ONNX
    model, a dplace graph: data parallelism, FSDP, a pipeline and an op-level placement weighed
    for global_batch samples, the searches in time_limit seconds, 10 without one, with seed;
    shapes fixes ONNX inputs' sizes as dplace.Problem takes them, ["x=32x3x224x224"]);
    cluster: a preset, NAME:N for N nodes, or a cluster file; fix: what to hold fixed, as a dict
    ({"tp": 8, "sp": True, "schedule": "1f1b"}) or "tp=8,sp=on"; exports: {framework: path} for
    megatron, torchtitan, deepspeed. Returns `plan --json`'s object, with "table" (the printed
    table) added. Bad input raises dplace.Error with the command line's one-line message.
    """
    model = _os.fspath(model)
    if _dplace._model_kind(model) == "graph":
        for given, name in ((seq_len is not None, "seq_len"), (fix, "fix"), (exports, "exports"),
                            (dtype != "bf16", "dtype"), (tp_across_nodes, "tp_across_nodes"),
                            (not flash_attention, "flash_attention")):
            if given:
                raise Error(f"{name}: applies to a config.json, not to {model}, a graph (its "
                            "plans: data parallelism, FSDP, a pipeline, an op-level placement)")
        result, table_text = _dplace._plan_graph(
            model, str(cluster), int(global_batch),
            10.0 if time_limit is None else float(time_limit), int(seed), list(shapes))
        result["table"] = table_text
        return result
    if time_limit is not None:
        raise Error("time_limit: applies to a graph, not to a config.json")
    if shapes:
        raise Error("shapes: applies to an ONNX graph, not to a config.json")
    if seq_len is None:
        raise Error("seq_len: required for a config.json")
    if isinstance(fix, Mapping):
        items = []
        for key, value in fix.items():
            if isinstance(value, bool):
                value = "on" if value else "off"
            items.append(f"{key}={value}")
        fix = ",".join(items)
    frameworks = dict(exports or {})
    result, table_text, files = _dplace._plan(
        model, str(cluster), int(global_batch), int(seq_len), dtype, fix or "",
        bool(tp_across_nodes), bool(flash_attention), list(frameworks))
    for entry in result["exports"]:
        if entry["framework"] not in files:
            raise Error(f"exports: {entry['framework']}: {entry['refusal']}, and no plan it runs "
                        "fits")
    for framework, path in frameworks.items():
        _dplace._write_text(_os.fspath(path), files[framework])
    result["table"] = table_text
    return result
