"""Stable-Baselines3 on gpusim: env-steps/s of SB3's PPO (``learn``) on ``gs.to_sb3(gs.make(
"CartPole-v1", num_envs=N))`` (eager, and with ``compile=``: one compiled graph per step, its
compilation in the warm-up) against SB3's own ``DummyVecEnv`` of gymnasium's CartPole-v1, and
of the bare vector-env step loop (random actions, no learning), alternating in one run.

The same PPO settings for both (``MlpPolicy``, ``n_steps=128``, ``batch_size=256``,
``n_epochs=4``, CPU, one torch thread unless ``--threads``); each measure is the best of
``--repeats`` after a warm-up ``learn`` of one rollout.

Usage::

    python benchmarks/bench_sb3.py [--envs 16 64] [--timesteps 16384] [--repeats 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

import gpusim as gs


def gpusim_venv(n: int) -> VecEnv:
    return gs.to_sb3(gs.make("CartPole-v1", num_envs=n, seed=0))


def gpusim_compiled_venv(n: int) -> VecEnv:
    return gs.to_sb3(gs.make("CartPole-v1", num_envs=n, seed=0), compile={"verbose": False})


def dummy_venv(n: int) -> VecEnv:
    return DummyVecEnv([lambda: gym.make("CartPole-v1")] * n)


CONTENDERS = {
    "gpusim to_sb3": gpusim_venv,
    "gpusim to_sb3 compiled": gpusim_compiled_venv,
    "SB3 DummyVecEnv": dummy_venv,
}


def ppo_rate(make, n: int, timesteps: int) -> float:
    """Env-steps/s of ``PPO.learn(timesteps)`` (a warm-up rollout first)."""
    model = PPO("MlpPolicy", make(n), n_steps=128, batch_size=256, n_epochs=4, seed=0, device="cpu")
    model.learn(total_timesteps=128 * n)
    start = time.perf_counter()
    model.learn(total_timesteps=timesteps, reset_num_timesteps=False)
    return timesteps / (time.perf_counter() - start)


def step_rate(make, n: int, steps: int) -> float:
    """Env-steps/s of the bare ``step`` loop with random actions."""
    venv = make(n)
    venv.reset()
    actions = np.random.default_rng(0).integers(0, 2, (steps, n))
    venv.step(actions[0])
    start = time.perf_counter()
    for t in range(steps):
        venv.step(actions[t])
    return steps * n / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--timesteps", type=int, default=16384)
    parser.add_argument("--steps", type=int, default=2000, help="steps of the bare step loop")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s); best of {args.repeats}, alternating")
    print(
        "| envs | measure | gpusim to_sb3 | gpusim to_sb3 compiled | SB3 DummyVecEnv | eager ratio | compiled ratio |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for n in args.envs:
        for measure, fn, size in (("PPO learn", ppo_rate, args.timesteps), ("step loop", step_rate, args.steps)):
            best = dict.fromkeys(CONTENDERS, 0.0)
            for _ in range(args.repeats):
                for name, make in CONTENDERS.items():
                    best[name] = max(best[name], fn(make, n, size))
            ours, compiled, theirs = best["gpusim to_sb3"], best["gpusim to_sb3 compiled"], best["SB3 DummyVecEnv"]
            print(
                f"| {n} | {measure} | {ours:,.0f} | {compiled:,.0f} | {theirs:,.0f} | {ours / theirs:.2f}x "
                f"| {compiled / theirs:.2f}x |",
                flush=True,
            )


if __name__ == "__main__":
    main()
