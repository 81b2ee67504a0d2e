"""Type stubs of the extension dplace._dplace (the run service; see the dplace package)."""

import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

PathLike = Union[str, os.PathLike]
# A placement as Python hands it over: a Result of the same problem, {op name: device name}
# (ops of a co-location group may be left out), a dplace-plan/1 dict, or a plan file's path.
Plan = Union["Result", Mapping[str, Any], str]

__version__: str

class Error(ValueError):
    """Bad input: the command line's one-line message ("<file>: <place>: <problem>")."""

class Graph:
    """An operator graph as loaded (immutable)."""
    @property
    def name(self) -> str: ...
    @property
    def num_ops(self) -> int: ...
    @property
    def batch(self) -> int:
        """The batch size where the format says it (an ONNX model's first input), else 0."""
    @property
    def saved_activation_bytes(self) -> float:
        """Bytes a training step keeps for its backward pass, each storage once (what
        saved_tensors_hooks counts, less parameters and inputs); dropout's mask as a GPU keeps it."""
    @property
    def saved_activation_bytes_cpu(self) -> float:
        """saved_activation_bytes as a CPU keeps them (dropout's float noise, not a 1-byte mask)."""
    def __len__(self) -> int: ...
    def op_names(self) -> List[str]:
        """The ops' names in id order (training expansion adds "<op>/grad", "<op>/update")."""
    def to_json(self) -> Dict[str, Any]:
        """The graph as a dplace-graph/1 dict with every field; load_graph reads it back."""

class Cluster:
    """A machine: devices and the links between them."""
    @property
    def name(self) -> str: ...
    @property
    def devices(self) -> List[str]: ...
    @property
    def kinds(self) -> List[str]:
        """The distinct device kinds, in order of first appearance."""
    @property
    def device_kinds(self) -> List[str]:
        """Each device's kind, in the order of `devices`."""

class Problem:
    """A graph on a cluster judged by an objective (step, throughput, latency or pipeline)."""
    def __init__(self, graph: Graph, cluster: Union[str, PathLike, Mapping[str, Any], Cluster, None] = None,
                 objective: str = "", *, devices: Optional[Sequence[str]] = None,
                 stages: int = 0, runtime: str = "", schedule: str = "",
                 recompute: str = "") -> None:
        """``cluster`` None: the machine the graph's file defines; ``objective`` "": throughput
        for the NeurIPS 2020 paper's files, else step; ``devices``: only these devices of the
        cluster, in order (the CLI's --devices); ``stages``: only its first N accelerators
        (--stages); ``runtime``: "executor" (default) or "eager" (a device map under
        accelerate, the CLI's --runtime); ``schedule``: "1f1b" (default), "gpipe", "zb-h1",
        "zb-h2" or "auto", optionally ":MICROBATCHES" (--schedule); ``recompute``: "none"
        (default), "full" or "auto" (--recompute). Raises Error as the CLI does."""
    @property
    def objective(self) -> str: ...
    @property
    def runtime(self) -> str: ...
    @property
    def graph(self) -> Graph: ...
    @property
    def cluster(self) -> Cluster: ...
    @property
    def num_ops(self) -> int: ...
    @property
    def num_devices(self) -> int: ...
    @property
    def lower_bound(self) -> float:
        """A lower bound on the objective over every feasible placement (seconds)."""
    def with_objective(self, objective: str) -> "Problem": ...

class Result:
    """A judged placement (what place_all, place and simulate return)."""
    @property
    def placer(self) -> str: ...
    @property
    def placement(self) -> Dict[str, str]:
        """{op name: device name} for every op."""
    @property
    def objective(self) -> str: ...
    @property
    def value(self) -> float:
        """Step time, max-load or latency, seconds (the input's unit for the paper's files)."""
    @property
    def feasible(self) -> bool: ...
    @property
    def reason(self) -> str:
        """Why the placement is infeasible; "" when feasible."""
    @property
    def lower_bound(self) -> float:
        """The problem's bound, raised by any bound a placer of the same run proved."""
    @property
    def gap(self) -> float:
        """value / lower_bound - 1."""
    @property
    def note(self) -> str: ...
    @property
    def search_time_s(self) -> float: ...
    @property
    def evaluations(self) -> int: ...
    @property
    def options(self) -> List[str]: ...
    @property
    def devices(self) -> List[Dict[str, Any]]:
        """Per device: name, kind, ops, busy_s, load, peak_memory_bytes, memory_capacity_bytes."""
    @property
    def robust(self) -> Optional[Dict[str, Any]]:
        """With place_all(robust=K): the values on the K variants, their median, worst, the robust
        value and whether the placer searched by it (docs/formats.md, "robust"); else None."""
    @property
    def measured(self) -> Optional[float]:
        """With place_all(measure=...): the measured seconds of the result's step (None where it
        does not fit); else None."""
    def to_json(self) -> Dict[str, Any]: ...

def load_graph(src: Union[PathLike, Mapping[str, Any]], *, training: bool = False,
               free_gradients: bool = False, dtype: str = "", shapes: Sequence[str] = ...,
               unit: str = "") -> Graph:
    """Any graph file the CLI reads (format detected), or a dplace-graph/1 dict; the keywords are
    the CLI's --training, --free-gradients, --dtype, --shapes NAME=DIMS and --unit."""
def load_cluster(src: Union[str, PathLike, Mapping[str, Any]]) -> Cluster:
    """A preset name, a dplace-cluster/1 file or dict."""
def presets() -> List[str]: ...
def placers() -> List[Dict[str, Any]]:
    """Every placer: name, description, family, objectives."""
def place_all(problem: Problem, placers: Optional[List[str]] = None, *, options: Any = None,
              seed: int = 1, time_limit: float = 0.0, total_time_limit: float = 0.0,
              evaluations: int = 0, start: Optional[Plan] = None, coarsen: int = 2000, robust: int = 0,
              robust_objective: str = "", robust_seed: int = 1,
              robust_spread: float = 0.1,
              measure: Optional[Callable[[Dict[str, str]], float]] = None) -> List[Result]: ...
def simulate(problem: Problem, plan: Plan) -> Result:
    """Judges a plan by the problem's objective (placer "plan")."""
def pipeline(problem: Problem, plan: Plan, schedule: str = "1f1b",
             microbatches: int = 8) -> Dict[str, Any]:
    """A schedule (gpipe, 1f1b, zb-h1, zb-h2, or auto: the fastest that fits) over the plan's
    stages, recomputing as the problem's ``recompute`` says: schedule, microbatches, makespan_s,
    time_per_microbatch_s, bubble_fraction, feasible, reason (when not), stages."""
def deploy(problem: Problem, results: Sequence[Result], tolerance: float = 0.01) -> Tuple[Result, List[str]]:
    """The plan `dplace place` writes (the tolerance rule) and the lines to read about the choice."""
def _plan(model: str, cluster: str, global_batch: int, seq_len: int, dtype: str, fix: str,
          tp_across_nodes: bool, flash_attention: bool,
          exports: List[str]) -> Tuple[Dict[str, Any], str, Dict[str, str]]:
    """`dplace plan`: (its JSON object, its table, {framework: settings}); see dplace.plan."""
def _model_kind(model: str) -> str:
    """What `dplace plan` takes the file for: "config", "piper" or "graph"."""
def _plan_graph(model: str, cluster: str, global_batch: int, time_limit_s: float,
                seed: int, shapes: List[str]) -> Tuple[Dict[str, Any], str]:
    """`dplace plan` on a graph: (its JSON object, its table); see dplace.plan."""
def _write_text(path: str, content: str) -> None:
    """Writes a text file as dplace writes its outputs (checked, atomically)."""
def fit_report(problem: Problem, batch: int = 0, plan: Optional[Plan] = None) -> List[str]:
    """Whether the step fits one device of each kind, the largest batch that would, what data
    parallelism gives, and with a plan its time per sample (`info --cluster`'s lines)."""
def table(problem: Problem, results: Sequence[Result]) -> str:
    """The comparison table and the best result's device table, as `dplace place` prints them."""
def device_map(problem: Problem, plan: Plan) -> Dict[str, Any]:
    """Hugging Face accelerate's device_map: {module path: GPU index or "cpu"}."""
def write_plan(path: str, problem: Problem, result: Result, format: str = "plan") -> None: ...
def write_trace(path: str, problem: Problem, plan: Plan) -> None:
    """Chrome trace (chrome://tracing, Perfetto) of the plan's simulated step."""
def write_device_map(path: str, problem: Problem, plan: Plan) -> None: ...
def write_stages(path: str, problem: Problem, plan: Plan) -> None:
    """The plan's contiguous stages as ``--export stages=PATH`` writes them (dplace-stages/1: the
    stages in pipeline order, split points, the schedule's run and the frameworks' terms);
    Error for a plan that is no pipeline of contiguous stages."""
def train(graphs: List[str], clusters: List[str], **options: Any) -> Dict[str, Any]:
    """run::Train (dplace.train documents it); built with LibTorch only."""
def write_report(path: str, problem: Problem, results: Sequence[Result]) -> None:
    """The results as `dplace place --json` prints them."""

class PlacementEnv:
    """The learning layer's environment (use dplace.env.PlacementEnv, its Gymnasium-style face)."""
    def __init__(self, problem: Problem, max_units: int = 2000, refresh_every: int = 1) -> None: ...
    def reset(self, start: Optional[Plan] = None) -> None: ...
    def step(self, action: int) -> float: ...
    def observe(self) -> Dict[str, Any]: ...
    def dag(self) -> Dict[str, np.ndarray]: ...
    done: bool
    num_units: int
    num_devices: int
    node_features: int
    device_features: int
    evaluations: int
    cost: float
    value: float
    feasible: bool
    placement: Dict[str, str]
    best_placement: Dict[str, str]
    best_value: float
    best_feasible: bool
