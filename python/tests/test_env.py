"""The Gymnasium-style environment: rewards are the evaluator's, evaluations are counted."""

import os
import subprocess
import sys

import numpy as np
import pytest

import dplace
from dplace.env import PlacementEnv

ROOT = os.environ.get("DPLACE_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture(scope="module")
def problem():
    check = os.path.join(ROOT, "testdata/baechi-check")
    return dplace.load_problem(os.path.join(check, "inception_v3_fwd.json"),
                               os.path.join(check, "baechi4.json"))


def test_spaces_and_observations(problem):
    env = PlacementEnv(problem)
    obs, info = env.reset(seed=5)
    assert env.observation_space.contains(obs)
    assert obs["nodes"].shape == (env.num_units, 12) and obs["nodes"].dtype == np.float32
    d = problem.num_devices
    assert obs["devices"].shape == (d, 8) and obs["allowed"].shape == (d,)
    assert obs["current"] == 0 and env.action_space.n == d
    edges = env.dag["edges"]
    assert edges.shape[0] == 2 and edges.shape[1] == env.dag["edge_bytes"].shape[0] > 0
    assert (edges[0] < edges[1]).all()  # topological order
    assert info["evaluations"] == 1
    assert info["value"] == pytest.approx(dplace.simulate(problem, env.placement).value)


def test_return_is_the_drop_of_cost_and_rewards_come_from_the_evaluator(problem):
    env = PlacementEnv(problem)
    obs, info = env.reset()
    start_cost, total, done, steps = info["cost"], 0.0, False, 0
    rng = np.random.default_rng(3)
    while not done:
        action = int(rng.choice(np.flatnonzero(obs["allowed"])))
        obs, reward, done, truncated, info = env.step(action)
        total += reward
        steps += 1
    assert steps == env.num_units
    assert total == pytest.approx(start_cost - info["cost"], abs=1e-9)
    judged = dplace.simulate(problem, env.placement)
    assert info["value"] == pytest.approx(judged.value)
    assert info["evaluations"] > 1  # every step that moved a unit was evaluated


def test_budget_truncates_and_bad_actions_raise(problem):
    env = PlacementEnv(problem, max_evaluations=3)
    obs, _ = env.reset()
    truncated = False
    for _ in range(env.num_units):
        allowed = np.flatnonzero(obs["allowed"])
        obs, _, terminated, truncated, info = env.step(int(allowed[-1]))
        if truncated or terminated:
            break
    assert truncated and info["evaluations"] >= 3
    env.reset()
    with pytest.raises(dplace.Error, match="not a device index"):
        env.step(99)
    with pytest.raises(dplace.Error, match="max_units"):
        PlacementEnv(problem, max_units=0)


def test_the_core_environment_refuses_a_step_before_reset(problem):
    env = dplace._dplace.PlacementEnv(problem, 64, 1)
    with pytest.raises(dplace.Error, match="no episode yet; call reset"):
        env.step(0)
    with pytest.raises(dplace.Error, match="no episode yet; call reset"):
        env.observe()
    env.reset()
    env.step(int(np.flatnonzero(env.observe()["allowed"])[0]))


def test_a_trained_policy_beats_random():
    script = os.path.join(ROOT, "examples", "train_policy.py")
    out = subprocess.run([sys.executable, script, "--seconds", "15"], capture_output=True,
                         text=True, env={**os.environ}, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "beats random" in out.stdout, out.stdout
