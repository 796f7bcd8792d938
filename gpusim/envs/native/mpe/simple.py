"""MPE ``simple``: one agent reaches one landmark.

Environment card
----------------
Source:
    VMAS 1.5 ``vmas/scenarios/mpe/simple.py`` (the MPE of Lowe et al. 2017, "Multi-Agent
    Actor-Critic for Mixed Cooperative-Competitive Environments"); physics of
    :mod:`gpusim.envs.native.mpe._world`.
Entities:
    ``agent_0`` (movable, radius 0.05, no contacts) and ``landmark 0`` (fixed, no contacts).
Groups:
    ``"agents"`` (``agent_0``).
Observation (float32 ``[*B, 1, 4]``):
    the agent's velocity, then the landmark's position relative to the agent.
Action:
    continuous ``[*B, 1, 2]`` force in ``[-1, 1]``, or discrete ``Categorical(9)`` (see
    :mod:`gpusim.envs.native.mpe._env`).
Reward (float32 ``[*B, 1, 1]``):
    minus the squared distance from the agent to the landmark.
Start state:
    agent and landmark uniform in ``[-1, 1]^2``; velocities zero.
Episode end:
    never terminated; ``truncated`` after ``max_steps`` steps when given.
Arguments:
    none beyond ``continuous_actions=True``, ``categorical_actions=True``, ``max_steps=None``.

Examples:
    >>> env = SimpleEnv(batch_size=[8], seed=0)
    >>> env.rollout(5)["next", "agents", "observation"].shape
    torch.Size([8, 5, 1, 4])
"""

from __future__ import annotations

from typing import Any

import torch

from gpusim.envs.native.mpe._env import MpeEnv, Team
from gpusim.envs.native.mpe._world import Body, ParticleWorld
from gpusim.envs.native.rng import ResetRows

__all__ = ["SimpleEnv"]


class SimpleEnv(MpeEnv):
    """VMAS's MPE ``simple`` scenario, batched (see the module's card).

    Args:
        batch_size: the batch dims.
        device: where the data lives.
        seed: seed of the env's random numbers.

    Keyword Args:
        continuous_actions: continuous or discrete actions.
        categorical_actions: discrete actions as indices or one-hot.
        max_steps: horizon (``None``: none).
        auto_reset_mode: ``"sparse"`` or ``"masked"``.
        **physics: the world's constants ``dt``, ``drag``, ``collision_force``, ``contact_margin``,
            ``mass_scale``, ``force_scale`` (numbers or ``[*B]`` tensors), ``randomize`` and
            ``expose_params``: see :class:`~gpusim.envs.native.mpe.MpeEnv`.

    Examples:
        >>> SimpleEnv(batch_size=[2]).group_map
        {'agents': ['agent_0']}
    """

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        continuous_actions: bool = True,
        categorical_actions: bool = True,
        max_steps: int | None = None,
        auto_reset_mode: str | None = None,
        **physics: Any,
    ) -> None:
        world = ParticleWorld(
            [Body("agent_0", movable=True, rotatable=True, collide=False, color=(0.25, 0.25, 0.25))],
            [Body("landmark 0", collide=False, color=(0.75, 0.25, 0.25))],
        )
        super().__init__(
            batch_size,
            device,
            seed,
            world=world,
            teams=[Team("agent", 1, 4)],
            continuous_actions=continuous_actions,
            categorical_actions=categorical_actions,
            max_steps=max_steps,
            auto_reset_mode=auto_reset_mode,
            **physics,
        )

    def _start(self, rows: ResetRows) -> dict[str, torch.Tensor]:
        return {"pos": self._uniform_positions(rows, -1.0, 1.0)}

    def _observe(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        pos, vel = self._cols(state["pos"]), self._cols(state["vel"][..., :1, :])  # [2, 2, M], [1, 2, M]
        return [self._rows_of(torch.cat([vel, (pos[1:] - pos[:1]).reshape(1, 2, -1)], 1))]

    def _reward(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        pos = self._cols(state["pos"])  # [2, 2, M]
        delta = pos[0] - pos[1]  # [2, M]
        return [self._agents_of(-(delta[0:1].square() + delta[1:2].square()))]
