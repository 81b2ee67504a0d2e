"""Trains a tiny REINFORCE policy of your own on dplace's simulator, from Python.

The policy scores each device for the unit being placed from the unit's features and the device's
(a two-layer perceptron over their concatenation, shared by every device), masked to the devices
the unit may run on. Episodes run on dplace.env.PlacementEnv; the reward is dplace's own evaluator
(the searches'). After training, the greedy policy's placement is judged against dplace's
`random` placer and the episodes' start.

    PYTHONPATH=build/release/python python3 examples/train_policy.py --seconds 60
"""

import argparse
import os
import time

import numpy as np
import torch

import dplace
from dplace.env import PlacementEnv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class DevicePolicy(torch.nn.Module):
    def __init__(self, node_features: int, device_features: int, hidden: int = 32) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(node_features + device_features, hidden), torch.nn.Tanh(),
            torch.nn.Linear(hidden, 1))

    def forward(self, obs: dict) -> torch.Tensor:
        node = torch.from_numpy(obs["nodes"][obs["current"]])
        devices = torch.from_numpy(obs["devices"])
        x = torch.cat([node.expand(devices.shape[0], -1), devices], dim=1)
        logits = self.net(x).squeeze(1)
        allowed = torch.from_numpy(obs["allowed"].astype(bool))
        return logits.masked_fill(~allowed, float("-inf"))


def run_episode(env: PlacementEnv, policy: DevicePolicy, greedy: bool):
    obs, info = env.reset()
    log_probs, ret = [], 0.0
    done = False
    while not done:
        dist = torch.distributions.Categorical(logits=policy(obs))
        action = int(torch.argmax(dist.probs)) if greedy else int(dist.sample())
        log_probs.append(dist.log_prob(torch.tensor(action)))
        obs, reward, terminated, truncated, info = env.step(action)
        ret += reward
        done = terminated or truncated
    return torch.stack(log_probs), ret, info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", default=os.path.join(ROOT, "models", "inception_v3.onnx"))
    parser.add_argument("--cluster", default="k80x4")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    problem = dplace.load_problem(args.graph, args.cluster)
    env = PlacementEnv(problem)
    policy = DevicePolicy(env.observation_space["nodes"].shape[1],
                          env.observation_space["devices"].shape[1])
    optimiser = torch.optim.Adam(policy.parameters(), lr=3e-3)
    baseline, episodes = None, 0
    started = time.monotonic()
    with torch.no_grad():
        _, _, start_info = run_episode(env, policy, greedy=True)
    print(f"{problem.graph.name} on {args.cluster}: {env.num_units} units, "
          f"{env.num_devices} devices")
    while time.monotonic() - started < args.seconds:
        log_probs, ret, info = run_episode(env, policy, greedy=False)
        baseline = ret if baseline is None else 0.9 * baseline + 0.1 * ret
        loss = -(ret - baseline) * log_probs.sum()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        episodes += 1
        if episodes % 20 == 0:
            print(f"episode {episodes}: return {ret:+.4f}, step {info['value'] * 1e3:.3f} ms")
    with torch.no_grad():
        _, _, final = run_episode(env, policy, greedy=True)
    best_placement, best_value, _ = env.best
    random_result = dplace.place(problem, "random", seed=args.seed)
    resimulated = dplace.simulate(problem, best_placement).value
    print(f"trained {episodes} episodes, {env.evaluations} evaluations")
    print(f"random placer:      {random_result.value * 1e3:.3f} ms")
    print(f"untrained (greedy): {start_info['value'] * 1e3:.3f} ms")
    print(f"trained (greedy):   {final['value'] * 1e3:.3f} ms")
    print(f"best seen:          {best_value * 1e3:.3f} ms (re-simulated {resimulated * 1e3:.3f} ms)")
    print("beats random" if final["value"] < random_result.value else "does not beat random")


if __name__ == "__main__":
    main()
