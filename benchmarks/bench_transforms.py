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
import math
import time

import torch
from tensordict import TensorDict

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
    """The TorchRL contender: a user-written TorchRL CartPole + torchrl transforms."""
    from torchrl.data import Bounded, Categorical, Composite, Unbounded
    from torchrl.envs import EnvBase
    from torchrl.envs import CatFrames as TCatFrames
    from torchrl.envs import Compose as TCompose
    from torchrl.envs import InitTracker as TInitTracker
    from torchrl.envs import RewardSum as TRewardSum
    from torchrl.envs import StepCounter as TStepCounter
    from torchrl.envs import TransformedEnv as TTransformedEnv
    from torchrl.envs import VecNorm as TVecNorm

    class TorchRLCartPole(EnvBase):
        gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
        theta_threshold_radians, x_threshold = 12 * 2 * math.pi / 360, 2.4

        def __init__(self):
            super().__init__(batch_size=[batch])
            B = self.batch_size
            inf = float("inf")
            high = torch.tensor([2 * self.x_threshold, inf, 2 * self.theta_threshold_radians, inf]).expand(*B, 4)
            self.observation_spec = Composite(
                observation=Bounded(-high, high, shape=(*B, 4)), state=Unbounded((*B, 4)), shape=B
            )
            self.state_spec = Composite(state=Unbounded((*B, 4)), shape=B)
            self.action_spec = Categorical(2, shape=B)
            self.reward_spec = Unbounded((*B, 1))

        def _reset(self, tensordict):
            B = self.batch_size
            state = torch.rand(*B, 4) * 0.1 - 0.05
            false = torch.zeros(*B, 1, dtype=torch.bool)
            return TensorDict({"observation": state, "state": state, "done": false, "terminated": false.clone()}, B)

        def _step(self, tensordict):
            state = tensordict["state"]
            action = tensordict["action"]
            x, x_dot, theta, theta_dot = state.unbind(-1)
            total_mass = self.masspole + self.masscart
            pml = self.masspole * self.length
            force = torch.where(action == 1, self.force_mag, -self.force_mag)
            cos, sin = torch.cos(theta), torch.sin(theta)
            temp = (force + pml * theta_dot.square() * sin) / total_mass
            thetaacc = (self.gravity * sin - cos * temp) / (
                self.length * (4.0 / 3.0 - self.masspole * cos.square() / total_mass)
            )
            xacc = temp - pml * thetaacc * cos / total_mass
            new_state = torch.add(state, torch.stack((x_dot, xacc, theta_dot, thetaacc), -1), alpha=self.tau)
            x, theta = new_state[..., 0:1], new_state[..., 2:3]
            terminated = (x.abs() > self.x_threshold) | (theta.abs() > self.theta_threshold_radians)
            return TensorDict(
                {
                    "observation": new_state,
                    "state": new_state,
                    "reward": torch.ones_like(x),
                    "done": terminated.clone(),
                    "terminated": terminated,
                },
                self.batch_size,
            )

        def _set_seed(self, seed):
            torch.manual_seed(seed)

    return TTransformedEnv(
        TorchRLCartPole(),
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


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


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
    print("| batch | T | gpusim rollout | torchrl rollout | ratio | gpusim no stack | torchrl no stack | ratio | gpusim compiled | ratio |")
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
