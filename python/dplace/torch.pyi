"""Type stubs of dplace.torch (PyTorch front end; torch is imported when a function runs)."""

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from . import Cluster, Graph, Problem, Result

PathLike = Union[str, os.PathLike]
Inputs = Union[torch.Tensor, Sequence[Any]]
# A plan: a Result, {op name: device name}, a dplace-plan/1 dict or file, or an accelerate-style
# device map {module path: GPU index or "cpu"}.
Plan = Union[Result, Mapping[str, Any], str]
ClusterLike = Union[Cluster, str, PathLike, Mapping[str, Any]]

class Profile:
    """Measured seconds per op of one model on one device kind (medians over in-context runs)."""
    kind: str
    device: str
    training: bool
    forward_s: Dict[str, float]
    backward_s: Dict[str, float]
    update_s: Dict[str, float]
    runs: int
    step_s: Optional[float]
    def total_s(self) -> float:
        """Sum of every op's time: a one-device step as the profile sees it."""
    def op_time(self, name: str) -> Optional[float]:
        """Seconds of an op named as in a (training-expanded) graph, or None."""
    def attach_doc(self, doc: Mapping[str, Any]) -> Dict[str, Any]:
        """A copy of a dplace-graph/1 dict with time_s[kind] on every op (dplace.Error when an
        op has no time here)."""

class Check:
    """Predicted against measured; rows: placement, what ("step", a device, "transfers"),
    predicted_s, measured_s, ratio."""
    rows: List[Dict[str, Any]]
    problem: Optional[Problem]
    profiles: Optional[List[Profile]]
    def step(self, placement: str) -> Tuple[float, float]:
        """(predicted_s, measured_s) of a placement's whole step."""

def graph_dict(model: torch.nn.Module, example_inputs: Inputs, name: Optional[str] = None,
               training: bool = False, leaves: Sequence[type] = ()) -> Dict[str, Any]:
    """The model's forward graph as a dplace-graph/1 dict (torch.fx; one op per node that
    computes a tensor, named "/<module path>/<node>")."""
def from_module(model: torch.nn.Module, example_inputs: Inputs, training: bool = False,
                name: Optional[str] = None,
                profile: Union[Profile, Sequence[Profile], None] = None,
                leaves: Sequence[type] = (), unit: str = "") -> Graph:
    """graph_dict loaded by the core; training: expanded by the core; profile: its times set."""
def profile(model: torch.nn.Module, example_inputs: Inputs,
            device: Union[str, torch.device, None] = "cpu",
            training: bool = False, warmup: int = 2, repeat: int = 10,
            optimizer: Any = "adam", leaves: Sequence[type] = (), steps: bool = False) -> Profile:
    """Op times measured in context (forward; with training, backward and optimiser update)."""
def attach(graph: Union[Graph, Mapping[str, Any]],
           *profiles: Profile) -> Union[Graph, Dict[str, Any]]:
    """The graph with each profile's times as time_s (a Graph for a Graph, a dict for a dict)."""
def local_cluster(devices: str = "cpu", name: Optional[str] = None) -> Dict[str, Any]:
    """This machine as a dplace-cluster/1 dict: "cpu", "cpu+cpu" or "cpu+gpu"."""
def keep_freed_memory() -> bool:
    """glibc's malloc keeps freed memory (no mmap, no trim); process-wide; True where applied."""
def apply(model: torch.nn.Module, plan: Plan, cluster: Optional[ClusterLike] = None,
          torch_devices: Optional[Mapping[str, Any]] = None, emulate_transfers: bool = False,
          leaves: Sequence[type] = ()) -> torch.fx.GraphModule:
    """The model run as the plan places it (modules moved; explicit transfers)."""
def measure(model: torch.nn.Module, example_inputs: Inputs, plan: Optional[Plan] = None,
            training: bool = False, warmup: int = 2, repeat: int = 10,
            cluster: Optional[ClusterLike] = None,
            torch_devices: Optional[Mapping[str, Any]] = None, emulate_transfers: bool = False,
            optimizer: Any = "adam") -> float:
    """Median seconds of a real step (inference, or forward + backward + optimiser step)."""
def device_map(model: torch.nn.Module, plan: Plan,
               problem: Optional[Problem] = None) -> Dict[str, Any]:
    """accelerate's device map of a plan; every key a get_submodule/get_parameter path."""
def dispatch(model: torch.nn.Module, device_map: Dict[str, Any]) -> torch.nn.Module:
    """The model run as accelerate's dispatch_model runs the map, emulated on this CPU."""
def check(model: torch.nn.Module, example_inputs: Inputs, cluster: Optional[ClusterLike] = None,
          training: bool = False, placements: Optional[Mapping[str, Any]] = None,
          warmup: int = 2, repeat: int = 10, profiles: Optional[Sequence[Profile]] = None,
          emulate_transfers: bool = True, optimizer: Any = "adam") -> Check:
    """Predicted (simulated on the profiled graph) against measured steps, per device too."""
