"""Pendulum swing-up, batched on device.

Environment card
----------------
Source:
    Gymnasium ``Pendulum-v1`` (``gymnasium/envs/classic_control/pendulum.py``), the classic
    inverted-pendulum swing-up. Same equations and constants, computed in float32.
Observation (``"observation"``, float32 ``[*B, 3]``, ``Bounded``):
    ``[cos(theta), sin(theta), theta_dot]`` with bounds ``[±1, ±1, ±max_speed]``.
State (``"state"``, float32 ``[*B, 2]``):
    ``[theta, theta_dot]`` as gymnasium's ``env.unwrapped.state`` (``theta`` is not wrapped;
    ``0`` is upright).
Action (``"action"``, ``Bounded(-max_torque, max_torque)``, float32 ``[*B, 1]``):
    the torque on the free end; it is clipped to ``[-max_torque, max_torque]`` before use.
Reward (``"reward"``, float32 ``[*B, 1]``):
    ``-(angle_normalize(theta)^2 + 0.1 * theta_dot^2 + 0.001 * torque^2)`` computed on the state
    before the step, in ``[-16.27, 0]`` with the defaults.
Start state:
    ``theta`` uniform in ``[-pi, pi]`` and ``theta_dot`` uniform in ``[-1, 1]`` (24-bit
    resolution, counter-based noise).
Episode end:
    never terminates; truncation (200 steps for ``Pendulum-v1``) comes from ``StepCounter``
    (see :func:`gpusim.make`).
Arguments:
    ``g=10.0``, ``m=1.0``, ``l=1.0``, ``dt=0.05``, ``max_speed=8.0``, ``max_torque=2.0``.

Examples:
    >>> env = PendulumEnv(batch_size=[8], seed=0, g=9.81)
    >>> td = env.rollout(5)
    >>> td["next", "observation"].shape
    torch.Size([8, 5, 3])
"""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs.native._base import NativeEnv, done_spec
from gpusim.envs.native._checks import check_positive
from gpusim.envs.native._ops import stack_last
from gpusim.envs.native.rng import ResetRows
from gpusim.specs import Bounded, Composite, Unbounded

__all__ = ["PendulumEnv", "angle_normalize"]


def angle_normalize(x: torch.Tensor) -> torch.Tensor:
    """Wrap angles to ``[-pi, pi)`` as gymnasium does (``((x + pi) mod 2 pi) - pi``).

    Examples:
        >>> [round(v, 4) for v in angle_normalize(torch.tensor([3 * math.pi / 2, -math.pi / 4, 7.0])).tolist()]
        [-1.5708, -0.7854, 0.7168]
    """
    return torch.remainder(x + math.pi, 2 * math.pi) - math.pi


class PendulumEnv(NativeEnv):
    """Batched Pendulum with gymnasium's ``Pendulum-v1`` dynamics (see the module's card).

    Args:
        batch_size: the batch dims, e.g. ``[4096]``.
        device: where the data lives (``None``: CPU).
        seed: seed of the reset noise (``None``: drawn from torch's global generator).

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"`` (default: sparse on CPU, masked elsewhere).
        g: gravitational acceleration (m/s^2).
        m: mass of the pendulum (kg).
        l: length of the pendulum (m).
        dt: seconds per step.
        max_speed: bound of the angular velocity (rad/s).
        max_torque: bound of the torque (N m).
        randomize: ``{param: distribution}`` re-drawn for the rows that reset (parameters:
            ``params``; see :mod:`gpusim.envs.native.params`).
        expose_params: put the per-env parameters in the observation spec too.

    The physical constants in ``params`` may also be ``[*B]`` tensors (one value per env).

    Examples:
        >>> env = PendulumEnv(batch_size=[2], seed=0)
        >>> env.action_spec.shape
        torch.Size([2, 1])
    """

    params = ("g", "m", "l", "dt")

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        auto_reset_mode: str | None = None,
        g: float = 10.0,
        m: float = 1.0,
        l: float = 1.0,  # noqa: E741 (gymnasium's name)
        dt: float = 0.05,
        max_speed: float = 8.0,
        max_torque: float = 2.0,
        randomize: dict[str, Any] | None = None,
        expose_params: bool = False,
    ) -> None:
        self.g = check_positive("g", g)
        self.m = check_positive("m", m)
        self.l = check_positive("l", l)
        self.dt = check_positive("dt", dt)
        self.max_speed = check_positive("max_speed", max_speed)
        self.max_torque = check_positive("max_torque", max_torque)
        super().__init__(
            batch_size,
            device,
            seed,
            auto_reset_mode=auto_reset_mode,
            num_noise=2,
            noise_bits=24,
            randomize=randomize,
            expose_params=expose_params,
        )
        B, dev = self.batch_size, self.device
        high = torch.tensor([1.0, 1.0, self.max_speed], dtype=torch.float32, device=dev).expand(*B, 3)
        self.observation_spec = Composite(
            observation=Bounded(-high, high, shape=(*B, 3), dtype=torch.float32, device=dev), shape=B, device=dev
        )
        self.state_spec = Composite(
            state=Unbounded(shape=(*B, 2), dtype=torch.float32, device=dev), shape=B, device=dev
        )
        self.action_spec = Bounded(-self.max_torque, self.max_torque, shape=(*B, 1), dtype=torch.float32, device=dev)
        self.reward_spec = Unbounded(shape=(*B, 1), dtype=torch.float32, device=dev)
        self.full_done_spec = done_spec(B, dev)
        self.register_buffer(
            "_reset_high", torch.tensor([math.pi, 1.0], dtype=torch.float32, device=dev), persistent=False
        )

    def _obs(self, theta: torch.Tensor, theta_dot: torch.Tensor) -> torch.Tensor:
        return stack_last((torch.cos(theta), torch.sin(theta), theta_dot))

    def _reset(self, tensordict: TensorDictBase | None, rows: ResetRows) -> TensorDictBase:
        state = rows.uniform(-1.0, 1.0, 2, bits=24) * self._reset_high
        done, terminated = self._flags()
        theta, theta_dot = state.unbind(-1)
        _, echo = self.physics(tensordict, rows)
        return self._out(observation=self._obs(theta, theta_dot), state=state, done=done, terminated=terminated, **echo)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        theta, theta_dot = tensordict["state"].unbind(-1)
        u = tensordict["action"][..., 0].clamp(-self.max_torque, self.max_torque)
        p, echo = self.physics(tensordict)
        g, m, l, dt = p["g"], p["m"], p["l"], p["dt"]  # noqa: E741 (gymnasium's name)
        costs = angle_normalize(theta).square() + 0.1 * theta_dot.square() + 0.001 * u.square()
        accel = 3.0 * g / (2.0 * l) * torch.sin(theta) + 3.0 / (m * l**2) * u
        new_theta_dot = (theta_dot + accel * dt).clamp(-self.max_speed, self.max_speed)
        new_theta = theta + new_theta_dot * dt
        done, terminated = self._flags()
        return self._out(
            observation=self._obs(new_theta, new_theta_dot),
            state=stack_last((new_theta, new_theta_dot)),
            reward=-costs.unsqueeze(-1),
            done=done,
            terminated=terminated,
            **echo,
        )
