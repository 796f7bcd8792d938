"""Per-env parameters: the cost of ``[*B]`` tensor parameters and of randomization at reset
against the scalar-parameter env, compiled, and of ``get_state``/``set_state``; alternating in
one run.

Contenders (``CartPole-v1``, compiled ``rollout``, random actions):

* ``scalar``: every constant a Python number (no ``"params"`` entry);
* ``tensor``: ``length`` and ``masspole`` as ``[*B]`` tensors;
* ``randomized``: ``length`` and ``masspole`` drawn from ``gs.uniform`` at each reset.

Usage::

    python benchmarks/bench_params.py [--num-envs 65536] [--steps 200] [--repeats 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import time

import torch

import gpusim as gs


def build(kind: str, n: int):
    if kind == "scalar":
        return gs.make("CartPole-v1", num_envs=n, seed=0)
    if kind == "tensor":
        return gs.make("CartPole-v1", num_envs=n, seed=0, length=torch.full((n,), 0.6), masspole=torch.full((n,), 0.2))
    randomize = {"length": gs.uniform(0.3, 0.9), "masspole": gs.uniform(0.05, 0.5)}
    return gs.make("CartPole-v1", num_envs=n, seed=0, randomize=randomize)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=65536)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    n, steps = args.num_envs, args.steps
    runners = {}
    for kind in ("scalar", "tensor", "randomized"):
        env = build(kind, n)
        runner = env.compile()
        start = time.perf_counter()
        runner(steps)  # compiles
        runners[kind] = runner
        print(f"{kind}: compiled in {time.perf_counter() - start:.1f} s", flush=True)
    best = dict.fromkeys(runners, float("inf"))
    for _ in range(args.repeats):
        for kind, runner in runners.items():
            start = time.perf_counter()
            runner(steps)
            best[kind] = min(best[kind], time.perf_counter() - start)
    print(f"\nCartPole-v1, {n} envs, {steps} steps, compiled, {args.threads} thread(s), best of {args.repeats}")
    print("| contender | M env-steps/s | time / scalar |")
    print("| --- | ---: | ---: |")
    for kind, seconds in best.items():
        print(f"| {kind} | {n * steps / seconds / 1e6:.1f} | {seconds / best['scalar']:.2f}x |")

    env = build("randomized", 4096)
    root = env.reset()
    env.get_state(root)
    timings = {"get_state": float("inf"), "set_state": float("inf")}
    for _ in range(20):
        start = time.perf_counter()
        state = env.get_state(root)
        timings["get_state"] = min(timings["get_state"], time.perf_counter() - start)
        start = time.perf_counter()
        env.set_state(state)
        timings["set_state"] = min(timings["set_state"], time.perf_counter() - start)
    print("\n4096 rows (best of 20): " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in timings.items()))


if __name__ == "__main__":
    main()
