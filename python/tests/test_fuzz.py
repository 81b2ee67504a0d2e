"""A seeded fuzzer over the Python package's entry points: wrong types, NaN and infinities in dicts,
a plan of another problem, calls after an error, and the environment's bad actions. Each call must
return or raise TypeError or dplace.Error (a ValueError); anything else, or the interpreter going
down, is a finding. DPLACE_FUZZ_SECONDS (default 15) bounds the run; DPLACE_FUZZ_SEED picks the
inputs. The cases it found are kept below as plain tests."""

import math
import os
import random
import time

import pytest

import dplace
from dplace.env import PlacementEnv

ROOT = os.environ.get("DPLACE_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
GRAPH = os.path.join(ROOT, "testdata", "fuzz", "seeds", "graph.json")
ALLOWED = (TypeError, dplace.Error)


def _values(problem, other, result):
    """What a caller might pass anywhere."""
    return [None, 0, -1, 1, 2 ** 31, 2 ** 64, -(2 ** 63) - 1, 1.5, math.nan, math.inf, -math.inf,
            "", "x", "mcmc", "all", "k80x4", "nosuch", GRAPH, b"bytes", [], [1, "a"], {}, (),
            {"a": math.nan}, {"format": "dplace-graph/1", "ops": [{"name": "a", "flops": math.nan}]},
            {"format": "dplace-graph/1", "ops": [{"name": "a", "flops": math.inf}]},
            {"format": "dplace-plan/1", "placement": {"nosuch": "gpu0"}},
            {"mcmc.chains": math.nan}, ["mcmc.chains=0"], {"mcmc.start": "mcmc"},
            problem, other, result, result.placement, object(), lambda: 1]


def _calls(problem, other, result, pick):
    """(name, thunk) pairs: each an entry point with some arguments drawn by `pick`."""
    small = dict(evaluations=20, time_limit=0.5)
    return [
        ("load_graph", lambda: dplace.load_graph(pick())),
        ("load_graph kw", lambda: dplace.load_graph(GRAPH, training=pick(), dtype=pick())),
        ("load_cluster", lambda: dplace.load_cluster(pick())),
        ("load_problem", lambda: dplace.load_problem(pick(), pick())),
        ("load_problem objective", lambda: dplace.load_problem(GRAPH, "k80x4", objective=pick())),
        ("Problem", lambda: dplace.Problem(pick(), pick(), pick())),
        ("place_all placers", lambda: dplace.place_all(problem, pick(), **small)),
        ("place_all options", lambda: dplace.place_all(problem, "mcmc", options=pick(), **small)),
        ("place_all seed", lambda: dplace.place_all(problem, "random", seed=pick())),
        ("place_all limits", lambda: dplace.place_all(problem, "heft", time_limit=pick(),
                                                      evaluations=pick())),
        ("place_all total", lambda: dplace.place_all(problem, "heft", total_time_limit=pick())),
        ("place_all start", lambda: dplace.place_all(problem, "mcmc", start=pick(), **small)),
        ("place_all robust", lambda: dplace.place_all(problem, "heft", robust=pick(),
                                                      robust_objective=pick())),
        ("place_all coarsen", lambda: dplace.place_all(problem, "heft", coarsen=pick())),
        ("place", lambda: dplace.place(pick(), pick(), **small)),
        ("simulate", lambda: dplace.simulate(problem, pick())),
        ("simulate other", lambda: dplace.simulate(other, pick())),
        ("pipeline", lambda: dplace.pipeline(problem, pick(), pick(), pick())),
        ("deploy", lambda: dplace.deploy(problem, pick(), tolerance=pick())),
        ("fit_report", lambda: dplace.fit_report(problem, pick(), pick())),
        ("table", lambda: dplace.table(problem, pick())),
        ("device_map", lambda: dplace.device_map(problem, pick())),
        ("with_objective", lambda: problem.with_objective(pick())),
        ("write_plan", lambda: dplace.write_plan(pick(), problem, pick())),
        ("write_trace", lambda: dplace.write_trace(pick(), problem, pick())),
    ]


def _env_steps(problem, rng, pick):
    """An episode of bad actions: out of range, masked, after the end, bad starts."""
    env = PlacementEnv(problem)
    try:
        env.reset(options={"start": pick()} if rng.random() < 0.3 else None)
    except ALLOWED:
        env.reset()
    for _ in range(rng.randrange(1, 12)):
        action = pick() if rng.random() < 0.5 else rng.randrange(-2, 6)
        try:
            _, reward, terminated, _, _ = env.step(action)
            assert isinstance(reward, float) and math.isfinite(reward)
        except ALLOWED:
            pass


def test_entry_points_raise_type_or_dplace_errors_only(tmp_path):
    seed = int(os.environ.get("DPLACE_FUZZ_SEED", "1"))
    seconds = float(os.environ.get("DPLACE_FUZZ_SECONDS", "15"))
    rng = random.Random(seed)
    problem = dplace.load_problem(GRAPH, "k80x4")
    other = dplace.load_problem(os.path.join(ROOT, "models", "resnet50.onnx"), "k80x4")
    result = dplace.place(other, "heft")
    values = _values(problem, other, result) + [str(tmp_path / "out.json"),
                                               str(tmp_path / "no" / "dir.json")]
    pick = lambda: rng.choice(values)  # noqa: E731
    calls = _calls(problem, other, result, pick)
    findings, runs, ended = [], 0, time.monotonic() + seconds
    while time.monotonic() < ended:
        runs += 1
        if rng.random() < 0.1:
            name, thunk = "env", lambda: _env_steps(problem, rng, pick)
        else:
            name, thunk = rng.choice(calls)
        try:
            thunk()
        except ALLOWED:
            pass
        except Exception as e:  # noqa: BLE001 - every other exception is a finding
            findings.append(f"{name}: {type(e).__name__}: {e}")
    print(f"{runs} calls, {len(findings)} findings")
    # The problem still places after every error.
    assert dplace.place(problem, "heft").feasible in (True, False)
    assert not findings, f"{len(findings)} of {runs} calls: " + "; ".join(sorted(set(findings))[:8])
    assert runs > 20


def test_a_plan_of_another_problem_is_an_error_naming_the_op():
    problem = dplace.load_problem(GRAPH, "k80x4")
    other = dplace.load_problem(os.path.join(ROOT, "models", "resnet50.onnx"), "k80x4")
    with pytest.raises(dplace.Error):
        dplace.simulate(problem, dplace.place(other, "heft"))
