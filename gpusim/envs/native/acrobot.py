"""Acrobot, batched on device.

Environment card
----------------
Source:
    Gymnasium ``Acrobot-v1`` (``gymnasium/envs/classic_control/acrobot.py``, from RLPy), after
    Sutton (1996), "Generalization in Reinforcement Learning: Successful Examples Using Sparse
    Coarse Coding", and Sutton & Barto's book. Same equations (book dynamics by default), one
    fourth-order Runge-Kutta step of ``dt`` per env step, computed in float32.
Observation (``"observation"``, float32 ``[*B, 6]``, ``Bounded``):
    ``[cos(theta1), sin(theta1), cos(theta2), sin(theta2), theta1_dot, theta2_dot]`` with bounds
    ``[±1, ±1, ±1, ±1, ±max_vel_1, ±max_vel_2]``. ``theta1 = 0`` hangs down; ``theta2`` is
    relative to the first link.
State (``"state"``, float32 ``[*B, 4]``):
    ``[theta1, theta2, theta1_dot, theta2_dot]`` as gymnasium's ``env.unwrapped.state``; angles
    are wrapped to ``[-pi, pi]``, velocities clipped to ``±max_vel_1`` / ``±max_vel_2``.
Action (``"action"``, ``Categorical(3)``, int64 ``[*B]``):
    the torque ``avail_torque[action]`` on the joint between the links (``-1, 0, +1``).
Reward (``"reward"``, float32 ``[*B, 1]``):
    ``-1`` every step that does not reach the target, ``0`` on the step that does.
Start state:
    the four state numbers uniform in ``[-0.1, 0.1]`` (16-bit resolution, counter-based noise).
Episode end:
    terminated when the free end is above the target: ``-cos(theta1) - cos(theta1 + theta2) >
    1``; truncation (500 steps for ``Acrobot-v1``) comes from ``StepCounter`` (see
    :func:`gpusim.make`).
Arguments:
    ``dt=0.2``, ``link_length_1=1.0``, ``link_mass_1=1.0``, ``link_mass_2=1.0``,
    ``link_com_pos_1=0.5``, ``link_com_pos_2=0.5``, ``link_moi=1.0`` (both links),
    ``max_vel_1=4 * pi``, ``max_vel_2=9 * pi``, ``avail_torque=(-1.0, 0.0, 1.0)``,
    ``gravity=9.8``, ``book_or_nips="book"``. Gymnasium's ``LINK_LENGTH_2`` only matters for
    rendering and its ``torque_noise_max`` (default 0) is not supported.

Examples:
    >>> env = AcrobotEnv(batch_size=[8], seed=0)
    >>> env.rollout(5)["next", "observation"].shape
    torch.Size([8, 5, 6])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs.native._base import NativeEnv, done_spec
from gpusim.envs.native._checks import check_choice, check_number, check_positive
from gpusim.envs.native._ops import stack_last
from gpusim.envs.native.rng import ResetRows
from gpusim.specs import Bounded, Categorical, Composite, Unbounded

__all__ = ["AcrobotEnv", "wrap_angle"]


def wrap_angle(x: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """Wrap ``x`` into ``[low, high]`` by whole periods, as gymnasium's ``wrap``.

    Values already inside are returned unchanged (so both bounds are kept); others are shifted
    by a multiple of ``high - low``.

    Examples:
        >>> wrap_angle(torch.tensor([370.0, -190.0, 180.0]), -180.0, 180.0).tolist()
        [10.0, 170.0, 180.0]
    """
    inside = (x >= low) & (x <= high)
    return torch.where(inside, x, torch.remainder(x - low, high - low) + low)


class AcrobotEnv(NativeEnv):
    """Batched Acrobot with gymnasium's ``Acrobot-v1`` dynamics (see the module's card).

    Args:
        batch_size: the batch dims, e.g. ``[4096]``.
        device: where the data lives (``None``: CPU).
        seed: seed of the reset noise (``None``: drawn from torch's global generator).

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"`` (default: sparse on CPU, masked elsewhere).
        dt: integration time step (s).
        link_length_1: length of the first link (m).
        link_mass_1, link_mass_2: masses of the links (kg).
        link_com_pos_1, link_com_pos_2: positions of the links' centres of mass (m).
        link_moi: moment of inertia of each link.
        max_vel_1, max_vel_2: bounds of the angular velocities (rad/s).
        avail_torque: the three torques selected by actions 0, 1, 2.
        gravity: gravitational acceleration (m/s^2).
        randomize: ``{param: distribution}`` re-drawn for the rows that reset (parameters:
            ``params``; see :mod:`gpusim.envs.native.params`); ``params`` may also be ``[*B]`` tensors.
        expose_params: put the per-env parameters in the observation spec too.
        book_or_nips: ``"book"`` (default) or ``"nips"`` dynamics.

    Examples:
        >>> env = AcrobotEnv(batch_size=[2], seed=0, book_or_nips="nips")
        >>> env.observation_spec["observation"].shape
        torch.Size([2, 6])
    """

    params = (
        "dt",
        "link_length_1",
        "link_mass_1",
        "link_mass_2",
        "link_com_pos_1",
        "link_com_pos_2",
        "link_moi",
        "gravity",
    )

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        auto_reset_mode: str | None = None,
        dt: float = 0.2,
        link_length_1: float = 1.0,
        link_mass_1: float = 1.0,
        link_mass_2: float = 1.0,
        link_com_pos_1: float = 0.5,
        link_com_pos_2: float = 0.5,
        link_moi: float = 1.0,
        max_vel_1: float = 4 * math.pi,
        max_vel_2: float = 9 * math.pi,
        avail_torque: Sequence[float] = (-1.0, 0.0, 1.0),
        gravity: float = 9.8,
        book_or_nips: str = "book",
        randomize: dict[str, Any] | None = None,
        expose_params: bool = False,
    ) -> None:
        self.dt = check_positive("dt", dt)
        self.link_length_1 = check_positive("link_length_1", link_length_1)
        self.link_mass_1 = check_positive("link_mass_1", link_mass_1)
        self.link_mass_2 = check_positive("link_mass_2", link_mass_2)
        self.link_com_pos_1 = check_positive("link_com_pos_1", link_com_pos_1)
        self.link_com_pos_2 = check_positive("link_com_pos_2", link_com_pos_2)
        self.link_moi = check_positive("link_moi", link_moi)
        self.max_vel_1 = check_positive("max_vel_1", max_vel_1)
        self.max_vel_2 = check_positive("max_vel_2", max_vel_2)
        if isinstance(avail_torque, (str, bytes)) or not isinstance(avail_torque, Sequence) or len(avail_torque) != 3:
            raise ValueError(f"avail_torque must be a sequence of 3 numbers, got {avail_torque!r}")
        self.avail_torque = tuple(check_number(f"avail_torque[{i}]", t) for i, t in enumerate(avail_torque))
        self.gravity = check_number("gravity", gravity)
        self.book_or_nips = check_choice("book_or_nips", book_or_nips, ("book", "nips"))
        super().__init__(
            batch_size,
            device,
            seed,
            auto_reset_mode=auto_reset_mode,
            num_noise=4,
            noise_bits=16,
            randomize=randomize,
            expose_params=expose_params,
        )
        B, dev = self.batch_size, self.device
        high = torch.tensor(
            [1.0, 1.0, 1.0, 1.0, self.max_vel_1, self.max_vel_2], dtype=torch.float32, device=dev
        ).expand(*B, 6)
        self.observation_spec = Composite(
            observation=Bounded(-high, high, shape=(*B, 6), dtype=torch.float32, device=dev), shape=B, device=dev
        )
        self.state_spec = Composite(
            state=Unbounded(shape=(*B, 4), dtype=torch.float32, device=dev), shape=B, device=dev
        )
        self.action_spec = Categorical(3, shape=B, device=dev)
        self.reward_spec = Unbounded(shape=(*B, 1), dtype=torch.float32, device=dev)
        self.full_done_spec = done_spec(B, dev)

    @staticmethod
    def _obs(theta1: torch.Tensor, theta2: torch.Tensor, dtheta1: torch.Tensor, dtheta2: torch.Tensor) -> torch.Tensor:
        return stack_last(
            (torch.cos(theta1), torch.sin(theta1), torch.cos(theta2), torch.sin(theta2), dtheta1, dtheta2)
        )

    def _reset(self, tensordict: TensorDictBase | None, rows: ResetRows) -> TensorDictBase:
        state = rows.uniform(-0.1, 0.1, 4, bits=16)
        done, terminated = self._flags()
        _, echo = self.physics(tensordict, rows)
        return self._out(
            observation=self._obs(*state.unbind(-1)), state=state, done=done, terminated=terminated, **echo
        )

    def _dsdt(self, s: torch.Tensor, torque: torch.Tensor, p: dict) -> torch.Tensor:
        """Time derivative of ``s = [theta1, theta2, dtheta1, dtheta2]`` under ``torque``, with the
        parameters ``p`` (numbers or ``[*B]`` tensors)."""
        m1, m2 = p["link_mass_1"], p["link_mass_2"]
        l1, lc1, lc2 = p["link_length_1"], p["link_com_pos_1"], p["link_com_pos_2"]
        i1 = i2 = p["link_moi"]
        g = p["gravity"]
        theta1, theta2, dtheta1, dtheta2 = s.unbind(-1)
        cos2, sin2 = torch.cos(theta2), torch.sin(theta2)
        d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * cos2) + i1 + i2
        d2 = m2 * (lc2**2 + l1 * lc2 * cos2) + i2
        phi2 = m2 * lc2 * g * torch.cos(theta1 + theta2 - math.pi / 2.0)
        phi1 = (
            -m2 * l1 * lc2 * dtheta2.square() * sin2
            - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin2
            + (m1 * lc1 + m2 * l1) * g * torch.cos(theta1 - math.pi / 2)
            + phi2
        )
        numerator = torque + d2 / d1 * phi1
        if self.book_or_nips == "book":
            numerator = numerator - m2 * l1 * lc2 * dtheta1.square() * sin2
        numerator = numerator - phi2
        ddtheta2 = numerator / (m2 * lc2**2 + i2 - d2.square() / d1)
        ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
        return stack_last((dtheta1, dtheta2, ddtheta1, ddtheta2))

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        s = tensordict["state"]
        action = tensordict["action"]
        t0, t1, t2 = self.avail_torque
        torque = torch.where(action == 0, t0, torch.where(action == 1, t1, t2))
        p, echo = self.physics(tensordict)
        dt = p["dt"]
        if isinstance(dt, torch.Tensor):  # per-env [*B] steps scale the [*B, 4] state rows
            dt = dt.unsqueeze(-1)
        k1 = self._dsdt(s, torque, p)
        k2 = self._dsdt(s + dt / 2.0 * k1, torque, p)
        k3 = self._dsdt(s + dt / 2.0 * k2, torque, p)
        k4 = self._dsdt(s + dt * k3, torque, p)
        ns = s + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        theta1, theta2, dtheta1, dtheta2 = ns.unbind(-1)
        theta1 = wrap_angle(theta1, -math.pi, math.pi)
        theta2 = wrap_angle(theta2, -math.pi, math.pi)
        dtheta1 = dtheta1.clamp(-self.max_vel_1, self.max_vel_1)
        dtheta2 = dtheta2.clamp(-self.max_vel_2, self.max_vel_2)
        terminated = ((-torch.cos(theta1) - torch.cos(theta2 + theta1)) > 1.0).unsqueeze(-1)
        reward = torch.where(terminated, 0.0, -1.0)
        return self._out(
            observation=self._obs(theta1, theta2, dtheta1, dtheta2),
            state=stack_last((theta1, theta2, dtheta1, dtheta2)),
            reward=reward,
            done=terminated.clone(),
            terminated=terminated,
            **echo,
        )
