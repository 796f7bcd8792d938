"""gpusim demo: fps of the native CartPole-v1 on the default device, eager vs compiled.

Runs ``gpusim.make("CartPole-v1", num_envs=N)`` (native batched CartPole + StepCounter(500))
on CUDA when available, else on the CPU, and reports env-steps/s of
``rollout(T, break_when_any_done=False)`` eagerly and with ``compile=True`` (compile time apart).

Usage::

    python benchmarks/demo.py [--num-envs N] [--steps T] [--device cpu|cuda] [--no-compile]
"""

from __future__ import annotations

import argparse
import time

import torch

import gpusim as gs


def timed_rollout(env, steps: int, **kwargs) -> tuple[float, float]:
    """(seconds of the first call, env-steps/s of the best of two later calls)."""
    device = env.device

    def run() -> float:
        start = time.perf_counter()
        env.rollout(steps, break_when_any_done=False, **kwargs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - start

    first = run()
    best = min(run(), run())
    return first, env.batch_size.numel() * steps / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--num-envs", type=int, default=None, help="default: 65536 on CUDA, 16384 on CPU")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    n = args.num_envs or (65536 if device.type == "cuda" else 16384)
    env = gs.make("CartPole-v1", num_envs=n, device=device, seed=0)
    print(f"gpusim {gs.__version__}: CartPole-v1, {n} envs, {args.steps} steps, device {device}")
    print(env)
    first, fps = timed_rollout(env, args.steps)
    print(f"eager    : {fps / 1e6:8.2f} M env-steps/s")
    if not args.no_compile:
        first, fps = timed_rollout(env, args.steps, compile=True)
        print(f"compiled : {fps / 1e6:8.2f} M env-steps/s   (first call incl. compile: {first:.1f} s)")
    data = env.rollout(args.steps, break_when_any_done=False)
    episodes = int(data["next", "done"].sum())
    print(f"one more eager rollout: {episodes} episodes ended; data {tuple(data.shape)} named {data.names}")


if __name__ == "__main__":
    main()
