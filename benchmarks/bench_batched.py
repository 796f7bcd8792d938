"""Batched CPU envs: ``SerialEnv``/``ParallelEnv`` of gymnasium CartPole, gpusim vs TorchRL 0.14.

Each contender is built once, warmed up, then timed on ``rollout(steps,
break_when_any_done=False)`` (random actions, auto-reset) in alternating rounds; the script
reports the median env-steps/s of each and the gpusim/TorchRL ratios.

TorchRL's ParallelEnv is started with ``fork`` like gpusim's (its own default is ``spawn``;
``--torchrl-start-method spawn`` measures that instead).

Usage::

    python benchmarks/bench_batched.py [--workers 2] [--steps 1000] [--repeats 5]
        [--only serial|parallel] [--torchrl-start-method fork|spawn]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch


def make_gpusim(kind: str, workers: int):
    from gpusim.envs.batched import ParallelEnv, SerialEnv
    from gpusim.envs.libs.gym import GymEnv

    cls = SerialEnv if kind == "serial" else ParallelEnv
    return cls(workers, lambda: GymEnv("CartPole-v1"))


def make_torchrl(kind: str, workers: int, start_method: str):
    from torchrl.envs import EnvCreator, GymEnv, ParallelEnv, SerialEnv

    factory = EnvCreator(lambda: GymEnv("CartPole-v1"))
    if kind == "serial":
        return SerialEnv(workers, factory)
    return ParallelEnv(workers, factory, mp_start_method=start_method)


def rate(env, steps: int) -> float:
    start = time.perf_counter()
    td = env.rollout(steps, break_when_any_done=False)
    elapsed = time.perf_counter() - start
    return td.numel() / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", choices=["serial", "parallel"], default=None)
    parser.add_argument("--torchrl-start-method", choices=["fork", "spawn"], default="fork")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(2)
    kinds = [args.only] if args.only else ["serial", "parallel"]
    results: dict = {}
    for kind in kinds:
        envs = {
            "gpusim": make_gpusim(kind, args.workers),
            "torchrl": make_torchrl(kind, args.workers, args.torchrl_start_method),
        }
        for env in envs.values():
            env.rollout(100, break_when_any_done=False)  # start workers, warm up
        rates: dict = {name: [] for name in envs}
        for _ in range(args.repeats):
            for name, env in envs.items():
                rates[name].append(rate(env, args.steps))
        for name, env in envs.items():
            env.close()
            results[(kind, name)] = statistics.median(rates[name])
    print(
        f"CartPole-v1 (gymnasium), {args.workers} workers, rollout({args.steps}), median of "
        f"{args.repeats}; torchrl ParallelEnv start method: {args.torchrl_start_method}"
    )
    print(f"{'env':<10} {'gpusim':>14} {'torchrl 0.14':>14} {'ratio':>7}")
    for kind in kinds:
        g, t = results[(kind, "gpusim")], results[(kind, "torchrl")]
        print(f"{kind:<10} {g:>10.0f} st/s {t:>10.0f} st/s {g / t:>6.2f}x")


if __name__ == "__main__":
    main()
