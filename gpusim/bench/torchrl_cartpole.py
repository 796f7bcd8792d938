"""The TorchRL contender: CartPole-v1 written as a TorchRL user writes a stateless env.

An ``EnvBase`` subclass with specs, ``_reset`` and ``_step`` (gymnasium's CartPole equations and
constants, the physical state travelling in the tensordict under ``"state"``), wrapped like
:func:`gpusim.make` wraps the native env: ``TransformedEnv(env, StepCounter(max_steps=500))``.
TorchRL itself merges the reset rows into the previous data (``_reset`` draws a fresh state for
every row, as a user's env does). TorchRL is imported when :func:`make_torchrl_cartpole` is
called, not at import.

Examples:
    >>> env = make_torchrl_cartpole(4)  # doctest: +SKIP
    >>> env.rollout(10, break_when_any_done=False).shape  # doctest: +SKIP
    torch.Size([4, 10])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["make_torchrl_cartpole", "CARTPOLE_MAX_STEPS"]

CARTPOLE_MAX_STEPS = 500
"""gymnasium's ``max_episode_steps`` for ``CartPole-v1``."""


@functools.cache
def _cartpole_class() -> type:
    from tensordict import TensorDict
    from torchrl.data import Bounded, Categorical, Composite, Unbounded
    from torchrl.envs import EnvBase

    class TorchRLCartPole(EnvBase):
        """CartPole-v1 as a TorchRL ``EnvBase`` (gymnasium's equations, float32)."""

        gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
        theta_threshold_radians, x_threshold = 12 * 2 * math.pi / 360, 2.4

        def __init__(self, batch_size: Sequence[int], device: Any = None) -> None:
            super().__init__(batch_size=batch_size, device=device)
            B, dev = self.batch_size, self.device
            inf = float("inf")
            high = torch.tensor([2 * self.x_threshold, inf, 2 * self.theta_threshold_radians, inf], device=dev).expand(
                *B, 4
            )
            self.observation_spec = Composite(
                observation=Bounded(-high, high, shape=(*B, 4), device=dev),
                state=Unbounded((*B, 4), device=dev),
                shape=B,
                device=dev,
            )
            self.state_spec = Composite(state=Unbounded((*B, 4), device=dev), shape=B, device=dev)
            self.action_spec = Categorical(2, shape=B, device=dev)
            self.reward_spec = Unbounded((*B, 1), device=dev)

        @property
        def total_mass(self) -> float:
            return self.masspole + self.masscart

        @property
        def polemass_length(self) -> float:
            return self.masspole * self.length

        def _reset(self, tensordict):
            B, dev = self.batch_size, self.device
            state = torch.rand(*B, 4, device=dev) * 0.1 - 0.05
            false = torch.zeros(*B, 1, dtype=torch.bool, device=dev)
            return TensorDict(
                {"observation": state, "state": state, "done": false, "terminated": false.clone()}, B, device=dev
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
                device=self.device,
            )

        def _set_seed(self, seed):
            torch.manual_seed(seed)

    return TorchRLCartPole


def make_torchrl_cartpole(
    num_envs: int, device: torch.device | str | None = None, max_steps: int | None = CARTPOLE_MAX_STEPS
):
    """TorchRL's counterpart of ``gpusim.make("CartPole-v1", num_envs)``.

    Args:
        num_envs: the batch size.
        device: the torch device of the env (``None``: CPU).
        max_steps: the time limit (a TorchRL ``StepCounter``); ``None`` returns the bare env.

    Returns:
        A ``torchrl.envs.TransformedEnv`` (or the bare ``EnvBase`` when ``max_steps`` is None).

    Raises:
        ImportError: if torchrl is not installed (saying what to install).

    Examples:
        >>> env = make_torchrl_cartpole(8, max_steps=None)  # doctest: +SKIP
        >>> type(env).__name__  # doctest: +SKIP
        'TorchRLCartPole'
    """
    try:
        cls = _cartpole_class()
    except ImportError as err:
        raise ImportError(
            f"the TorchRL contender needs torchrl: pip install torchrl ({err}); it pins tensordict<0.15, "
            "so install it in an environment of its own (see the README)"
        ) from err
    env = cls([num_envs], device=device)
    if max_steps is None:
        return env
    from torchrl.envs import StepCounter, TransformedEnv

    return TransformedEnv(env, StepCounter(max_steps=max_steps))
