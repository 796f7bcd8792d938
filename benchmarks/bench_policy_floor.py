"""The floor a policy puts under collection throughput: the PPO actor of the examples (a 2x64 tanh
MLP over CartPole's 4 observations and a categorical draw) timed alone, eager and compiled, at a
batch of envs, beside one compiled-collector step and one step of gymnasium's numpy vector env.

A collector that calls this policy every step cannot run faster than the policy's forward pass;
``bench_training.py`` compares whole collection loops. Usage::

    python benchmarks/bench_policy_floor.py [--envs 4096] [--threads 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT))

from ppo_cartpole import make_agent  # noqa: E402

import gpusim as gs  # noqa: E402


def per_call_ms(fn, n: int = 200) -> float:
    for _ in range(5):
        fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    actor, _ = make_agent(0)
    obs = torch.randn(args.envs, 4)
    rows = []
    with torch.no_grad():
        rows.append(("MLP forward, eager", per_call_ms(lambda: actor.net(obs))))
        net = torch.compile(actor.net, fullgraph=True)
        rows.append(("MLP forward, compiled", per_call_ms(lambda: net(obs))))
        dist = actor.dist(obs)
        rows.append(("categorical draw, eager", per_call_ms(lambda: dist.sample())))
        env = gs.make("CartPole-v1", num_envs=args.envs, seed=0)
        collector = gs.Collector(
            env, actor, frames_per_batch=args.envs * 32, total_frames=-1, compile={"verbose": False}
        )
        batches = iter(collector)
        next(batches)  # compiles
        rows.append(("compiled collector, one step", per_call_ms(lambda: next(batches), n=5) / 32))
    try:
        import gymnasium as gym
        import numpy as np

        vec = gym.make_vec("CartPole-v1", num_envs=args.envs, vectorization_mode="vector_entry_point")
        vec.reset(seed=0)
        actions = np.zeros(args.envs, dtype=np.int64)
        rows.append(("gymnasium numpy env step (no policy)", per_call_ms(lambda: vec.step(actions))))
    except ImportError:
        pass
    print(f"# {args.envs} envs, {args.threads} torch threads")
    print("| part | ms per step |")
    print("| --- | ---: |")
    for name, ms in rows:
        print(f"| {name} | {ms:.3f} |")


if __name__ == "__main__":
    main()
