"""Mountain Car (discrete and continuous actions), batched on device.

Environment card
----------------
Source:
    Gymnasium ``MountainCar-v0`` (``gymnasium/envs/classic_control/mountain_car.py``) and
    ``MountainCarContinuous-v0`` (``continuous_mountain_car.py``), after Moore (1990),
    "Efficient Memory-based Learning for Robot Control". Same equations and constants,
    computed in float32.
Observation (``"observation"``, float32 ``[*B, 2]``, ``Bounded``):
    ``[position, velocity]`` in ``[min_position, max_position] x [-max_speed, max_speed]``.
State (``"state"``, float32 ``[*B, 2]``):
    the same two numbers, in the order of gymnasium's ``env.unwrapped.state``. The observation
    and the state are the same tensor (no copy is made).
Action:
    ``MountainCarEnv``: ``Categorical(3)``, int64 ``[*B]``: ``0`` accelerate left, ``1`` don't
    accelerate, ``2`` accelerate right. ``MountainCarContinuousEnv``: ``Bounded(min_action,
    max_action)``, float32 ``[*B, 1]``: the force, clipped to the bounds and multiplied by
    ``power``.
Dynamics:
    ``velocity += push - gravity * cos(3 * position)``, clipped to ``±max_speed``;
    ``position += velocity``, clipped to ``[min_position, max_position]``; the left wall is
    inelastic (velocity set to 0 when the position sits at ``min_position`` with a negative
    velocity). ``push`` is ``(action - 1) * force`` (discrete) or ``clip(action) * power``.
Reward (``"reward"``, float32 ``[*B, 1]``):
    discrete: ``-1`` every step. Continuous: ``-0.1 * action^2`` (the action as given, before
    clipping, as in gymnasium) plus ``100`` on the step that reaches the goal.
Start state:
    position uniform in ``[-0.6, -0.4]`` (24-bit resolution, counter-based noise), velocity 0.
Episode end:
    terminated when ``position >= goal_position`` and ``velocity >= goal_velocity``; truncation
    (200 steps for ``MountainCar-v0``, 999 for ``MountainCarContinuous-v0``) comes from
    ``StepCounter`` (see :func:`gpusim.make`).
Arguments:
    both: ``min_position=-1.2``, ``max_position=0.6``, ``max_speed=0.07``, ``goal_velocity=0.0``,
    ``gravity=0.0025``. Discrete: ``goal_position=0.5``, ``force=0.001``. Continuous:
    ``goal_position=0.45``, ``power=0.0015``, ``min_action=-1.0``, ``max_action=1.0``.

Examples:
    >>> env = MountainCarEnv(batch_size=[8], seed=0)
    >>> env.rollout(5)["next", "observation"].shape
    torch.Size([8, 5, 2])
    >>> env = MountainCarContinuousEnv(batch_size=[8], seed=0)
    >>> env.action_spec.shape
    torch.Size([8, 1])
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs.native._base import NativeEnv, done_spec
from gpusim.envs.native._checks import check_increasing, check_number, check_positive
from gpusim.envs.native._ops import stack_last
from gpusim.envs.native.rng import ResetRows
from gpusim.specs import Bounded, Categorical, Composite, Unbounded

__all__ = ["MountainCarEnv", "MountainCarContinuousEnv"]


class _MountainCarBase(NativeEnv):
    """Specs, reset and the shared valley dynamics of both Mountain Car variants."""

    def __init__(
        self,
        batch_size: Any,
        device: torch.device | str | None,
        seed: int | None,
        *,
        auto_reset_mode: str | None = None,
        min_position: float,
        max_position: float,
        max_speed: float,
        goal_position: float,
        goal_velocity: float,
        gravity: float,
        randomize: dict[str, Any] | None,
        expose_params: bool,
    ) -> None:
        self.min_position = check_number("min_position", min_position)
        self.max_position = check_number("max_position", max_position)
        check_increasing("min_position", self.min_position, "max_position", self.max_position)
        self.max_speed = check_positive("max_speed", max_speed)
        self.goal_position = check_number("goal_position", goal_position)
        self.goal_velocity = check_number("goal_velocity", goal_velocity)
        self.gravity = check_number("gravity", gravity)
        super().__init__(
            batch_size,
            device,
            seed,
            auto_reset_mode=auto_reset_mode,
            num_noise=1,
            noise_bits=24,
            randomize=randomize,
            expose_params=expose_params,
        )
        B, dev = self.batch_size, self.device
        low = torch.tensor([self.min_position, -self.max_speed], dtype=torch.float32, device=dev).expand(*B, 2)
        high = torch.tensor([self.max_position, self.max_speed], dtype=torch.float32, device=dev).expand(*B, 2)
        self.observation_spec = Composite(
            observation=Bounded(low, high, shape=(*B, 2), dtype=torch.float32, device=dev), shape=B, device=dev
        )
        self.state_spec = Composite(
            state=Unbounded(shape=(*B, 2), dtype=torch.float32, device=dev), shape=B, device=dev
        )
        self.reward_spec = Unbounded(shape=(*B, 1), dtype=torch.float32, device=dev)
        self.full_done_spec = done_spec(B, dev)

    def _reset(self, tensordict: TensorDictBase | None, rows: ResetRows) -> TensorDictBase:
        position = rows.uniform(-0.6, -0.4, 1, bits=24)[..., 0]
        state = stack_last((position, torch.zeros_like(position)))
        done, terminated = self._flags()
        _, echo = self.physics(tensordict, rows)
        return self._out(observation=state, state=state, done=done, terminated=terminated, **echo)

    def _move(self, state: torch.Tensor, push: torch.Tensor, gravity: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """One valley step (``push``: ``[*B]``; ``gravity``: a number or ``[*B]``): returns
        ``(new_state [*B, 2], terminated [*B, 1])``."""
        position, velocity = state.unbind(-1)
        velocity = (velocity + (push - gravity * torch.cos(3.0 * position))).clamp(-self.max_speed, self.max_speed)
        position = (position + velocity).clamp(self.min_position, self.max_position)
        velocity = torch.where((position == self.min_position) & (velocity < 0), 0.0, velocity)
        terminated = (position >= self.goal_position) & (velocity >= self.goal_velocity)
        return stack_last((position, velocity)), terminated.unsqueeze(-1)


class MountainCarEnv(_MountainCarBase):
    """Batched Mountain Car with gymnasium's ``MountainCar-v0`` dynamics (see the module's card).

    Args:
        batch_size: the batch dims, e.g. ``[4096]``.
        device: where the data lives (``None``: CPU).
        seed: seed of the reset noise (``None``: drawn from torch's global generator).

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"`` (default: sparse on CPU, masked elsewhere).
        min_position, max_position: the track bounds.
        max_speed: bound of the velocity.
        goal_position, goal_velocity: the goal (both must be reached or exceeded).
        force: acceleration of a push.
        gravity: strength of the valley's pull.
        randomize: ``{param: distribution}`` re-drawn for the rows that reset (parameters:
            ``params``; see :mod:`gpusim.envs.native.params`); ``params`` may also be ``[*B]`` tensors.
        expose_params: put the per-env parameters in the observation spec too.

    Examples:
        >>> env = MountainCarEnv(batch_size=[2], seed=0, goal_velocity=0.01)
        >>> env.action_spec.n
        3
    """

    params = ("force", "gravity")

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        auto_reset_mode: str | None = None,
        min_position: float = -1.2,
        max_position: float = 0.6,
        max_speed: float = 0.07,
        goal_position: float = 0.5,
        goal_velocity: float = 0.0,
        force: float = 0.001,
        gravity: float = 0.0025,
        randomize: dict[str, Any] | None = None,
        expose_params: bool = False,
    ) -> None:
        self.force = check_number("force", force)
        super().__init__(
            batch_size,
            device,
            seed,
            auto_reset_mode=auto_reset_mode,
            min_position=min_position,
            max_position=max_position,
            max_speed=max_speed,
            goal_position=goal_position,
            goal_velocity=goal_velocity,
            gravity=gravity,
            randomize=randomize,
            expose_params=expose_params,
        )
        self.action_spec = Categorical(3, shape=self.batch_size, device=self.device)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        p, echo = self.physics(tensordict)
        push = (tensordict["action"] - 1).to(torch.float32) * p["force"]
        state, terminated = self._move(tensordict["state"], push, p["gravity"])
        return self._out(
            observation=state,
            state=state,
            reward=torch.full_like(terminated, -1.0, dtype=torch.float32),
            done=terminated.clone(),
            terminated=terminated,
            **echo,
        )


class MountainCarContinuousEnv(_MountainCarBase):
    """Batched Mountain Car with gymnasium's ``MountainCarContinuous-v0`` dynamics.

    See the module's card.

    Args:
        batch_size: the batch dims, e.g. ``[4096]``.
        device: where the data lives (``None``: CPU).
        seed: seed of the reset noise (``None``: drawn from torch's global generator).

    Keyword Args:
        auto_reset_mode: ``"sparse"`` or ``"masked"`` (default: sparse on CPU, masked elsewhere).
        min_action, max_action: the action bounds (actions are clipped to them).
        min_position, max_position: the track bounds.
        max_speed: bound of the velocity.
        goal_position, goal_velocity: the goal (both must be reached or exceeded).
        power: acceleration per unit of action.
        gravity: strength of the valley's pull.
        randomize: ``{param: distribution}`` re-drawn for the rows that reset (parameters:
            ``params``; see :mod:`gpusim.envs.native.params`); ``params`` may also be ``[*B]`` tensors.
        expose_params: put the per-env parameters in the observation spec too.

    Examples:
        >>> env = MountainCarContinuousEnv(batch_size=[2], seed=0)
        >>> env.action_spec.space.high.tolist()
        [[1.0], [1.0]]
    """

    params = ("power", "gravity")

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        auto_reset_mode: str | None = None,
        min_action: float = -1.0,
        max_action: float = 1.0,
        min_position: float = -1.2,
        max_position: float = 0.6,
        max_speed: float = 0.07,
        goal_position: float = 0.45,
        goal_velocity: float = 0.0,
        power: float = 0.0015,
        gravity: float = 0.0025,
        randomize: dict[str, Any] | None = None,
        expose_params: bool = False,
    ) -> None:
        self.min_action = check_number("min_action", min_action)
        self.max_action = check_number("max_action", max_action)
        check_increasing("min_action", self.min_action, "max_action", self.max_action)
        self.power = check_number("power", power)
        super().__init__(
            batch_size,
            device,
            seed,
            auto_reset_mode=auto_reset_mode,
            min_position=min_position,
            max_position=max_position,
            max_speed=max_speed,
            goal_position=goal_position,
            goal_velocity=goal_velocity,
            gravity=gravity,
            randomize=randomize,
            expose_params=expose_params,
        )
        B, dev = self.batch_size, self.device
        self.action_spec = Bounded(self.min_action, self.max_action, shape=(*B, 1), dtype=torch.float32, device=dev)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict["action"]
        p, echo = self.physics(tensordict)
        push = action[..., 0].clamp(self.min_action, self.max_action) * p["power"]
        state, terminated = self._move(tensordict["state"], push, p["gravity"])
        reward = torch.where(terminated, 100.0, 0.0) - 0.1 * action.square()
        return self._out(
            observation=state, state=state, reward=reward, done=terminated.clone(), terminated=terminated, **echo
        )
