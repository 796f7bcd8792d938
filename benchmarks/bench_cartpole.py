"""CartPole fps table: gpusim eager and compiled rollouts against gymnasium's numpy vector env
and TorchRL 0.14.1, side by side in one run (issue 5's table).

Every contender runs CartPole-v1 physics with auto-reset of finished rows and random actions:
- ``gymnasium``: ``CartPoleVectorEnv`` (numpy), ``step`` loop with random actions;
- ``torchrl``: the same physics as a TorchRL ``EnvBase``, ``rollout(T, break_when_any_done=False)``;
- ``gpusim eager``: ``CartPoleEnv.rollout(T, break_when_any_done=False)``;
- ``gpusim compiled``: ``CartPoleEnv.rollout(T, break_when_any_done=False, compile=True)``;
- with ``--transforms``: the same with ``StepCounter, RewardSum, InitTracker, CatFrames(4),
  VecNorm`` for torchrl and gpusim (eager and compiled).

Usage::

    python benchmarks/bench_cartpole.py [--batches 1 64 4096 65536] [--seconds 1.0] [--transforms]
        [--device cpu] [--contenders gymnasium torchrl eager compiled]

Figures are env-steps/s (batch x steps / wall seconds), best of ``--repeats`` timed runs after
warm-up; compile time is reported apart.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gpusim as gs  # noqa: E402


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def steps_for(batch: int, seconds: float, rate_guess: float) -> int:
    """Rollout length so that one timed run lasts about ``seconds`` at ``rate_guess`` env-steps/s."""
    return int(max(8, min(5000, seconds * rate_guess / batch)))


def time_gymnasium(batch: int, seconds: float, repeats: int) -> float:
    from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

    env = CartPoleVectorEnv(num_envs=batch)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    T = steps_for(batch, seconds, 2e7 if batch > 1000 else 2e4 * batch)
    actions = rng.integers(0, 2, size=(T, batch))
    best = 0.0
    for _ in range(repeats + 1):
        start = time.perf_counter()
        for t in range(T):
            env.step(actions[t])
        best = max(best, batch * T / (time.perf_counter() - start))
    return best


def gpusim_transforms() -> "gs.Compose":
    from gpusim.transforms import CatFrames, Compose, InitTracker, RewardSum, StepCounter, VecNorm

    return Compose(
        StepCounter(), RewardSum(), InitTracker(), CatFrames(4, dim=-1, in_keys=["observation"]),
        VecNorm(in_keys=["observation"]),
    )


def torchrl_transforms():
    from torchrl.envs import CatFrames, Compose, InitTracker, RewardSum, StepCounter, VecNorm

    return Compose(
        StepCounter(), RewardSum(), InitTracker(), CatFrames(4, dim=-1, in_keys=["observation"]),
        VecNorm(in_keys=["observation"]),
    )


def time_rollout(env, batch: int, T: int, repeats: int, **kwargs) -> tuple[float, float]:
    """Best env-steps/s of ``env.rollout(T)`` and the seconds taken by the first (warm-up) call.

    Every rollout contender of a batch runs the same ``T``: the output size (and so the cost of
    stacking it) must be the same on both sides of a ratio."""
    device = getattr(env, "device", torch.device("cpu")) or torch.device("cpu")
    start = time.perf_counter()
    env.rollout(T, break_when_any_done=False, **kwargs)
    _sync(device)
    warmup = time.perf_counter() - start
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        env.rollout(T, break_when_any_done=False, **kwargs)
        _sync(device)
        best = max(best, batch * T / (time.perf_counter() - start))
    return best, warmup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64, 4096, 65536])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--transforms", action="store_true", help="add the 5-transform composition rows")
    parser.add_argument(
        "--contenders", nargs="+", default=["gymnasium", "torchrl", "eager", "compiled"],
        choices=["gymnasium", "torchrl", "eager", "compiled"],
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    rows = []
    for batch in args.batches:
        row: dict[str, float] = {}
        notes: dict[str, float] = {}
        T = steps_for(batch, args.seconds, 5e6)  # one rollout length for every contender of the batch
        if "gymnasium" in args.contenders:
            row["gymnasium"] = time_gymnasium(batch, args.seconds, args.repeats)
        if "torchrl" in args.contenders:
            from bench_native import make_torchrl_cartpole

            row["torchrl"], _ = time_rollout(make_torchrl_cartpole(batch), batch, T, args.repeats)
            if args.transforms:
                from torchrl.envs import TransformedEnv

                env = TransformedEnv(make_torchrl_cartpole(batch), torchrl_transforms())
                row["torchrl+T"], _ = time_rollout(env, batch, T, args.repeats)
        if "eager" in args.contenders:
            env = gs.CartPoleEnv(batch_size=[batch], device=device, seed=0)
            row["gpusim eager"], _ = time_rollout(env, batch, T, args.repeats)
            if args.transforms:
                env = gs.TransformedEnv(gs.CartPoleEnv(batch_size=[batch], device=device, seed=0), gpusim_transforms())
                row["gpusim eager+T"], _ = time_rollout(env, batch, T, args.repeats)
        if "compiled" in args.contenders:
            env = gs.CartPoleEnv(batch_size=[batch], device=device, seed=0)
            row["gpusim compiled"], notes["compile s"] = time_rollout(
                env, batch, T, args.repeats, compile=True
            )
            if args.transforms:
                env = gs.TransformedEnv(gs.CartPoleEnv(batch_size=[batch], device=device, seed=0), gpusim_transforms())
                row["gpusim compiled+T"], notes["compile+T s"] = time_rollout(
                    env, batch, T, args.repeats, compile=True
                )
        rows.append((batch, row, notes))
        print(f"batch {batch}: " + ", ".join(f"{k} {v / 1e6:.3f} M" for k, v in row.items())
              + "".join(f", {k} {v:.1f}" for k, v in notes.items()), flush=True)
    names = list(rows[0][1])
    print(f"\nCartPole env-steps/s, device {device}, {args.threads} threads (M = millions)\n")
    print("| batch | " + " | ".join(names) + " |")
    print("| ---: | " + " | ".join("---:" for _ in names) + " |")
    for batch, row, _ in rows:
        print(f"| {batch} | " + " | ".join(f"{row[n] / 1e6:.3f} M" for n in names) + " |")
    for peer in ("gymnasium", "torchrl", "torchrl+T"):
        for batch, row, _ in rows:
            if peer not in row:
                continue
            mine = {k: v for k, v in row.items() if k.startswith("gpusim") and k.endswith("+T") == peer.endswith("+T")}
            ratios = ", ".join(f"{k} {v / row[peer]:.2f}x" for k, v in mine.items())
            print(f"batch {batch}: vs {peer}: {ratios}")


if __name__ == "__main__":
    main()
