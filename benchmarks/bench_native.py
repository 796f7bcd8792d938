"""CartPole eager rollout throughput: gpusim's native ``CartPoleEnv`` vs TorchRL 0.14.1.

Both contenders run ``env.rollout(T, break_when_any_done=False)`` (random actions from the
action spec, auto-reset of finished rows) on the same CartPole physics. The TorchRL contender is
written the way a TorchRL user writes a stateless env: an ``EnvBase`` subclass with specs,
``_reset`` and ``_step``, the state travelling in the tensordict. Runs alternate between the two
contenders; each figure is the best of ``--repeats`` timed rollouts after one warm-up rollout.

Usage::

    python benchmarks/bench_native.py [--batches 1 64 4096 65536] [--repeats 3] [--seconds 1.0]

Prints one table: env-steps/s for each contender and batch and the gpusim / TorchRL ratio, with the
default contiguous output and with ``return_contiguous=False`` (no final stacking copy), which
shows how much of the time goes into stacking the T steps.
"""

from __future__ import annotations

import argparse
import math
import time

import torch
from tensordict import TensorDict

from gpusim.envs.native import CartPoleEnv


def make_torchrl_cartpole(batch: int):
    """CartPole written as a TorchRL ``EnvBase`` subclass (same physics as gpusim's)."""
    from torchrl.data import Bounded, Categorical, Composite, Unbounded
    from torchrl.envs import EnvBase

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

        @property
        def total_mass(self):
            return self.masspole + self.masscart

        @property
        def polemass_length(self):
            return self.masspole * self.length

        def _reset(self, tensordict):
            B = self.batch_size
            state = torch.rand(*B, 4) * 0.1 - 0.05
            false = torch.zeros(*B, 1, dtype=torch.bool)
            return TensorDict(
                {"observation": state, "state": state, "done": false, "terminated": false.clone()}, B
            )

        def _step(self, tensordict):
            state = tensordict["state"]
            action = tensordict["action"]
            x, x_dot, theta, theta_dot = state.unbind(-1)
            total_mass, pml = self.total_mass, self.polemass_length
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

    return TorchRLCartPole()


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
        envs = {"gpusim": CartPoleEnv(batch_size=[batch], seed=0), "torchrl": make_torchrl_cartpole(batch)}
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


def _fmt(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


if __name__ == "__main__":
    main()
