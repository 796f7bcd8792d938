"""CartPole eager rollout throughput: gpusim's native ``CartPoleEnv`` vs TorchRL 0.14.1.

Both contenders run ``env.rollout(T, break_when_any_done=False)`` (random actions from the
action spec, auto-reset of finished rows) on the same CartPole physics. The TorchRL contender is
written the way a TorchRL user writes a stateless env: an ``EnvBase`` subclass with specs,
``_reset`` and ``_step``, the state travelling in the tensordict. Runs alternate between the two
contenders; each figure is the best of ``--repeats`` timed rollouts after one warm-up rollout.
The TorchRL env is :func:`gpusim.bench.torchrl_cartpole.make_torchrl_cartpole` without its time
limit, like gpusim's bare ``CartPoleEnv`` here (``gpusim compare`` times both with it).

Usage::

    python benchmarks/bench_native.py [--batches 1 64 4096 65536] [--repeats 3] [--seconds 1.0]

Prints one table: env-steps/s for each contender and batch and the gpusim / TorchRL ratio, with the
default contiguous output and with ``return_contiguous=False`` (no final stacking copy), which
shows how much of the time goes into stacking the T steps.
"""

from __future__ import annotations

import argparse
import time

import torch

from gpusim.bench.report import fmt_rate as _fmt
from gpusim.bench.torchrl_cartpole import make_torchrl_cartpole
from gpusim.envs.native import CartPoleEnv


def _steps_for(batch: int, seconds: float) -> int:
    """Rollout length giving roughly ``seconds`` per timed rollout (a rough prior per batch)."""
    per_step_s = 5e-4 + batch * 2.5e-7
    return max(10, min(2000, int(seconds / per_step_s)))


def _time_rollout(env, steps: int, contiguous: bool = True) -> float:
    start = time.perf_counter()
    td = env.rollout(steps, break_when_any_done=False, return_contiguous=contiguous)
    elapsed = time.perf_counter() - start
    assert td.shape[-1] == steps
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64, 4096, 65536])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.0, help="target seconds per timed rollout")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    import torchrl

    print(f"torch {torch.__version__}, torchrl {torchrl.__version__}, threads {torch.get_num_threads()}, CPU")
    rows = []
    for batch in args.batches:
        steps = _steps_for(batch, args.seconds)
        envs = {
            "gpusim": CartPoleEnv(batch_size=[batch], seed=0),
            "torchrl": make_torchrl_cartpole(batch, max_steps=None),
        }
        for env in envs.values():  # warm-up
            env.rollout(min(steps, 20), break_when_any_done=False)
        best = {(name, c): float("inf") for name in envs for c in (True, False)}
        for _ in range(args.repeats):
            for contiguous in (True, False):
                for name, env in envs.items():  # alternate contenders
                    key = (name, contiguous)
                    best[key] = min(best[key], _time_rollout(env, steps, contiguous))
        fps = {key: batch * steps / t for key, t in best.items()}
        rows.append((batch, steps, fps))
        print(f"  batch {batch}: done", flush=True)

    print()
    print("rollout(T, break_when_any_done=False), env-steps/s (lazy: return_contiguous=False, i.e. without")
    print("the final copy of the T steps into one contiguous tensordict)")
    print()
    print("| batch | T | gpusim | torchrl | ratio | gpusim lazy | torchrl lazy | ratio lazy |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for batch, steps, f in rows:
        g, t = f["gpusim", True], f["torchrl", True]
        gl, tl = f["gpusim", False], f["torchrl", False]
        print(
            f"| {batch} | {steps} | {_fmt(g)} | {_fmt(t)} | {g / t:.2f}x | {_fmt(gl)} | {_fmt(tl)} | {gl / tl:.2f}x |"
        )


if __name__ == "__main__":
    main()
