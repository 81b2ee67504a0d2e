"""The learning layer's environment as a Gymnasium-style class (no gymnasium needed).

An episode places a problem's units (its co-location groups, or the groups of its coarsened
graph when it has more than ``max_units``) one at a time in topological order, starting from a
placement (default: each unit on its fastest device that has room); the action is the index of the
device the current unit goes to. The reward of a step is the drop of the scale-free cost
(step time / lower bound, with a penalty for memory overflow) since the last evaluation, so an
episode's return is the start's cost minus the end's. Every evaluation is one of dplace's
evaluator, the same the searches use, and is counted (``info["evaluations"]``); with
``max_evaluations`` an episode is truncated once the budget is spent.

Observations are a dict of numpy arrays:

- ``nodes``: float32, units x 12 features (see docs/learned.md: times, bytes, the device each unit
  is on, simulated start/end, critical path, the current unit's marker);
- ``devices``: float32, devices x 8 features for the current unit;
- ``allowed``: uint8, per device: may the current unit run there;
- ``current``: the index of the unit to place now.

``Env.dag`` gives the units' edges (2 x E), bytes per edge and op-type hashes for message passing.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _dplace


class Discrete:
    """Actions 0 .. n-1 (gymnasium.spaces.Discrete's interface, without gymnasium)."""

    def __init__(self, n: int, seed: Optional[int] = None) -> None:
        self.n = int(n)
        self.shape: Tuple[int, ...] = ()
        self.dtype = np.int64
        self._rng = np.random.default_rng(seed)

    def sample(self, mask: Optional[np.ndarray] = None) -> int:
        """A uniform action, among those ``mask`` allows when given."""
        choices = np.arange(self.n) if mask is None else np.flatnonzero(mask)
        return int(self._rng.choice(choices))

    def contains(self, x: Any) -> bool:
        return isinstance(x, (int, np.integer)) and 0 <= int(x) < self.n

    def __repr__(self) -> str:
        return f"Discrete({self.n})"


class Box:
    """An array of a fixed shape and dtype with bounds (gymnasium.spaces.Box's interface)."""

    def __init__(self, low: float, high: float, shape: Tuple[int, ...], dtype: Any) -> None:
        self.low, self.high, self.shape, self.dtype = low, high, tuple(shape), dtype

    def contains(self, x: Any) -> bool:
        return isinstance(x, np.ndarray) and x.shape == self.shape and x.dtype == self.dtype

    def __repr__(self) -> str:
        return f"Box({self.low}, {self.high}, {self.shape}, {np.dtype(self.dtype).name})"


class DictSpace(dict):
    """Named sub-spaces (gymnasium.spaces.Dict's role)."""

    def contains(self, x: Any) -> bool:
        return isinstance(x, dict) and all(
            k in x and (not hasattr(s, "contains") or s.contains(x[k])) for k, s in self.items())


class PlacementEnv:
    """Gymnasium-style environment over a :class:`dplace.Problem` (``reset``/``step``)."""

    metadata: Dict[str, Any] = {"render_modes": []}

    def __init__(self, problem: Any, *, max_units: int = 2000, refresh_every: int = 1,
                 start: Any = None, max_evaluations: int = 0) -> None:
        """``start``: the plan episodes begin from (a Result, dict or file; None: the fastest
        device per unit). ``refresh_every``: steps between evaluations at the latest (1 is
        Placeto's: every step that moved something is evaluated)."""
        if max_evaluations < 0:
            raise _dplace.Error("max_evaluations: must not be negative")
        self._env = _dplace.PlacementEnv(problem, max_units, refresh_every)
        self._start = start
        self._max_evaluations = int(max_evaluations)
        n, d = self._env.num_units, self._env.num_devices
        self.num_units, self.num_devices = n, d
        self.action_space = Discrete(d)
        self.observation_space = DictSpace(
            nodes=Box(-np.inf, np.inf, (n, self._env.node_features), np.float32),
            devices=Box(-np.inf, np.inf, (d, self._env.device_features), np.float32),
            allowed=Box(0, 1, (d,), np.uint8),
            current=Discrete(n))
        self.dag: Dict[str, np.ndarray] = self._env.dag()
        self._last_obs: Optional[Dict[str, Any]] = None

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """Starts an episode; ``options={"start": plan}`` overrides the start. Returns
        (observation, info). The environment itself draws nothing at random: ``seed`` seeds
        ``action_space.sample``."""
        if seed is not None:
            self.action_space = Discrete(self.num_devices, seed)
        start = (options or {}).get("start", self._start)
        self._env.reset(start)
        self._last_obs = self._env.observe()
        return self._last_obs, self._info()

    def step(self, action: int) -> Tuple[Dict[str, Any], float, bool, bool, Dict[str, Any]]:
        """Puts the current unit on device ``action``. Returns (observation, reward, terminated,
        truncated, info); at the end of an episode the observation is the last one seen."""
        if not self.action_space.contains(action):
            raise _dplace.Error(f"step: action {action!r} is not a device index from 0 to "
                                f"{self.num_devices - 1}")
        reward = self._env.step(int(action))
        terminated = self._env.done
        truncated = (not terminated and self._max_evaluations > 0
                     and self._env.evaluations >= self._max_evaluations)
        if not terminated:
            self._last_obs = self._env.observe()
        return self._last_obs, float(reward), terminated, truncated, self._info()

    def _info(self) -> Dict[str, Any]:
        return {"value": self._env.value, "feasible": self._env.feasible,
                "cost": self._env.cost, "evaluations": self._env.evaluations}

    @property
    def placement(self) -> Dict[str, str]:
        """The placement now, {op name: device name}."""
        return self._env.placement

    @property
    def best(self) -> Tuple[Dict[str, str], float, bool]:
        """The best placement any evaluation saw: (placement, value, feasible)."""
        return self._env.best_placement, self._env.best_value, self._env.best_feasible

    @property
    def evaluations(self) -> int:
        return self._env.evaluations

    def close(self) -> None:
        pass
