"""Transformed CartPole eager rollout: gpusim vs TorchRL 0.14.1, same transform composition.

Both contenders run ``env.rollout(T, break_when_any_done=False)`` (random actions, auto-reset of
finished rows) of::

    TransformedEnv(CartPole, Compose(StepCounter(), RewardSum(), InitTracker(),
                                     CatFrames(4, dim=-1, in_keys=["observation"]),
                                     VecNorm(in_keys=["observation"])))

gpusim uses its native ``CartPoleEnv`` and ``gpusim.transforms``; TorchRL uses a CartPole written
the way a TorchRL user writes a stateless env (an ``EnvBase`` subclass with the same physics, the
state travelling in the tensordict) and ``torchrl.envs`` transforms. Runs alternate between
the contenders; each figure is the best of ``--repeats`` timed rollouts after a warm-up rollout.

Usage::

    python benchmarks/bench_transforms.py [--batches 65536] [--steps 100] [--repeats 3] [--threads 2]
                                          [--compile]

Prints one table: env-steps/s for each contender and batch and the gpusim / TorchRL ratio, for the
rollout itself, for the same steps without the final stacking copy of the T steps (the transform
pipeline alone; TorchRL's ``return_contiguous=False`` still dense-stacks identical steps, so it is
not used) and, with ``--compile``, gpusim's ``rollout(compile=True)`` (TorchRL has no counterpart;
the ratio is against its rollout).
"""

from __future__ import annotations

import argparse
import time

import torch

from gpusim.bench.report import fmt_rate as _fmt
from gpusim.bench.torchrl_cartpole import make_torchrl_cartpole
from gpusim.envs.native import CartPoleEnv
from gpusim.transforms import CatFrames, Compose, InitTracker, RewardSum, StepCounter, TransformedEnv, VecNorm


def make_gpusim(batch: int):
    """The gpusim contender: native CartPole + gpusim transforms."""
    return TransformedEnv(
        CartPoleEnv(batch_size=[batch], seed=0),
        Compose(
            StepCounter(),
            RewardSum(),
            InitTracker(),
            CatFrames(4, dim=-1, in_keys=["observation"]),
            VecNorm(in_keys=["observation"]),
        ),
    )


def make_torchrl(batch: int):
    """The TorchRL contender: the user-written TorchRL CartPole of ``gpusim.bench`` (no time
    limit, like gpusim's bare ``CartPoleEnv`` here) + torchrl transforms."""
    from torchrl.envs import CatFrames as TCatFrames
    from torchrl.envs import Compose as TCompose
    from torchrl.envs import InitTracker as TInitTracker
    from torchrl.envs import RewardSum as TRewardSum
    from torchrl.envs import StepCounter as TStepCounter
    from torchrl.envs import TransformedEnv as TTransformedEnv
    from torchrl.envs import VecNorm as TVecNorm

    return TTransformedEnv(
        make_torchrl_cartpole(batch, max_steps=None),
        TCompose(
            TStepCounter(),
            TRewardSum(),
            TInitTracker(),
            TCatFrames(4, dim=-1, in_keys=["observation"]),
            TVecNorm(in_keys=["observation"]),
        ),
    )


def _loop(env, steps: int) -> list:
    """``steps`` x (random action + ``step_and_maybe_reset``), keeping every step's data alive
    as a rollout does, without the final stacking."""
    td = env.reset()
    kept = []
    for _ in range(steps):
        stepped, td = env.step_and_maybe_reset(env.rand_action(td))
        kept.append(stepped)
    return kept


def _time_rollout(env, steps: int, contiguous: bool = True, compile: bool = False, loop: bool = False) -> float:
    start = time.perf_counter()
    if loop:
        assert len(_loop(env, steps)) == steps
        return time.perf_counter() - start
    if compile:
        td = env.rollout(steps, break_when_any_done=False, compile=True)
    else:
        td = env.rollout(steps, break_when_any_done=False, return_contiguous=contiguous)
    elapsed = time.perf_counter() - start
    assert td.shape[-1] == steps
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[65536])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compile", action="store_true", help="also time gpusim's rollout(compile=True)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    import warnings

    warnings.filterwarnings("ignore")
    import torchrl

    print(f"torch {torch.__version__}, torchrl {torchrl.__version__}, threads {torch.get_num_threads()}, CPU")
    rows = []
    for batch in args.batches:
        envs = {"gpusim": make_gpusim(batch), "torchrl": make_torchrl(batch)}
        modes = [(name, kind) for kind in ("contiguous", "loop") for name in ("gpusim", "torchrl")]
        if args.compile:
            modes.append(("gpusim", "compiled"))
            envs["gpusim"].rollout(args.steps, break_when_any_done=False, compile=True)  # compile first
        for env in envs.values():  # warm-up
            env.rollout(min(args.steps, 10), break_when_any_done=False)
        best = {m: float("inf") for m in modes}
        for _ in range(args.repeats):
            for m in modes:  # alternate contenders
                name, kind = m
                best[m] = min(
                    best[m], _time_rollout(envs[name], args.steps, compile=kind == "compiled", loop=kind == "loop")
                )
        fps = {m: batch * args.steps / t for m, t in best.items()}
        rows.append((batch, fps))
        print(f"  batch {batch}: done", flush=True)
    print()
    print("env-steps/s. rollout: env.rollout(T, break_when_any_done=False) (contiguous output);")
    print("no stack: T x (random action + step_and_maybe_reset) keeping each step's data, without the")
    print("final stacking copy; compiled: gpusim rollout(compile=True) (ratio against TorchRL's rollout)")
    print()
    print(
        "| batch | T | gpusim rollout | torchrl rollout | ratio | gpusim no stack | torchrl no stack | ratio | gpusim compiled | ratio |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for batch, fps in rows:
        g, t = fps[("gpusim", "contiguous")], fps[("torchrl", "contiguous")]
        gl, tl = fps[("gpusim", "loop")], fps[("torchrl", "loop")]
        gc = fps.get(("gpusim", "compiled"))
        rc = f"{gc / t:.2f}x" if gc else "-"
        print(
            f"| {batch} | {args.steps} | {_fmt(g)} | {_fmt(t)} | {g / t:.2f}x | {_fmt(gl)} | {_fmt(tl)} | "
            f"{gl / tl:.2f}x | {_fmt(gc)} | {rc} |"
        )


if __name__ == "__main__":
    main()
