"""Compiled rollouts with and without one of the runner's CPU fast paths, A/B in one process.

``--flag direct`` (default): direct calls (``gpusim.envs.compiled.DIRECT_CALLS``): one runner whose
calls after the guarded ones run the cache entry's code directly, one whose calls all go through
Dynamo (guards under ``skip_guard_eval_unsafe``); both pause the GC during their calls.
``--flag vectorize``: ``VECTORIZE_STRIDED`` (Inductor's tiling heuristics off) against Inductor's
defaults, both with direct calls.

Each repeat times one ``runner.run(T)`` of each runner, alternately, continuing its episodes; the
median per step is printed with env-steps/s and the ratio (on / off).

Usage::

    python benchmarks/bench_compiled_paths.py [--flag direct|vectorize] [--env CartPole-v1]
        [--batches 16 1024 4096 65536] [--threads 2] [--repeats 5] [--transforms]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import gpusim as gs
from gpusim.envs import compiled

FLAGS = {"direct": "DIRECT_CALLS", "vectorize": "VECTORIZE_STRIDED"}


def make_runner(name: str, batch: int, flag: str, on: bool, transforms: bool):
    """A compiled runner (random actions) with ``flag`` set to ``on``, and its root after one run."""
    setattr(compiled, FLAGS[flag], on)
    env = gs.make(name, num_envs=batch, seed=0)
    if transforms:
        from gpusim.transforms import CatFrames, Compose, InitTracker, RewardSum, StepCounter, VecNorm

        env = gs.TransformedEnv(
            env,
            Compose(
                StepCounter(), RewardSum(), InitTracker(), CatFrames(4, dim=-1, in_keys=["observation"]), VecNorm()
            ),
        )
    runner = compiled.CompiledRollout(env, verbose=False)
    runner(4)
    return runner, runner.last_root()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flag", choices=sorted(FLAGS), default="direct")
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--batches", type=int, nargs="+", default=[16, 1024, 4096, 65536])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--transforms", action="store_true", help="the 5-transform stack of issue #16")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    flag = FLAGS[args.flag]
    print(
        f"{args.env}{' + 5 transforms' if args.transforms else ''}, compiled, {args.threads} thread(s), "
        f"median of {args.repeats} runs: {flag} off / on"
    )
    print(
        f"  {'envs':>6s} {'T':>5s} {'off us/step':>12s} {'on us/step':>11s} {'M/s off':>8s} "
        f"{'M/s on':>8s} {'on/off':>7s}"
    )
    saved = {name: getattr(compiled, name) for name in FLAGS.values()}
    try:
        for batch in args.batches:
            steps = max(64, min(2000, 4_000_000 // batch))
            runners = {
                name: list(make_runner(args.env, batch, args.flag, name == "on", args.transforms))
                for name in ("off", "on")
            }
            for state in runners.values():  # the compile and one run of this length
                _, state[1] = state[0].run(steps, state[1])
            times: dict[str, list[float]] = {name: [] for name in runners}
            for _ in range(args.repeats):
                for name, state in runners.items():
                    start = time.perf_counter()
                    _, state[1] = state[0].run(steps, state[1])
                    times[name].append((time.perf_counter() - start) / steps)
            a, b = (statistics.median(times[n]) for n in ("off", "on"))
            if args.flag == "direct":
                assert runners["on"][0].direct_calls > 0 and runners["off"][0].direct_calls == 0
            print(
                f"  {batch:6d} {steps:5d} {a * 1e6:12.1f} {b * 1e6:11.1f} {batch / a / 1e6:8.1f} "
                f"{batch / b / 1e6:8.1f} {a / b:6.2f}x"
            )
    finally:
        for name, value in saved.items():
            setattr(compiled, name, value)


if __name__ == "__main__":
    main()
