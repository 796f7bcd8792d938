"""MPE ``simple_push``: an agent reaches its goal landmark while an adversary pushes it away.

Environment card
----------------
Source:
    VMAS 1.5 ``vmas/scenarios/mpe/simple_push.py`` (MPE "keep-away", Lowe et al. 2017); physics of
    :mod:`gpusim.envs.native.mpe._world`.
Entities:
    ``adversary_0`` and ``agent_0`` (movable, radius 0.05, colliding with each other) and two
    landmarks (fixed, no contacts) coloured ``(0.1, 0.9, 0.1)`` and ``(0.1, 0.1, 0.9)``; one of
    them is the goal.
Groups:
    ``"adversary"`` and ``"agent"``.
Observation (float32):
    agent (19): its velocity, the goal's relative position, its colour (``0.25`` grey plus
    ``0.5`` on the goal's colour channel), the landmarks' relative positions, the landmarks'
    colours, the adversary's relative position; adversary (8): its velocity, the landmarks'
    relative positions, the agent's relative position.
Action:
    continuous ``[..., 2]`` in ``[-1, 1]`` or discrete ``Categorical(9)``.
Reward (float32 ``[..., 1]``):
    agent: minus its distance to the goal; adversary: the agent's distance to the goal minus its
    own.
Start state:
    agents and landmarks uniform in ``[-1, 1]^2``; the goal a uniform landmark of each row.
Episode end:
    never terminated; ``truncated`` after ``max_steps`` steps when given.
Arguments:
    ``continuous_actions``, ``categorical_actions``, ``max_steps`` (VMAS's scenario has none).
Differences from VMAS:
    the goal (and the agent's colour) is drawn per row and per episode (state entry
    ``"goal"``); VMAS draws one for all its envs at a full reset.

Examples:
    >>> env = SimplePushEnv(batch_size=[8], seed=0)
    >>> env.rollout(5)["next", "agent", "observation"].shape
    torch.Size([8, 5, 1, 19])
"""

from __future__ import annotations

from typing import Any

import torch

from gpusim.envs.native.mpe._env import MpeEnv, Team
from gpusim.envs.native.mpe._world import Body, ParticleWorld
from gpusim.envs.native.rng import ResetRows

__all__ = ["SimplePushEnv"]

_LANDMARK_COLORS = ((0.1, 0.9, 0.1), (0.1, 0.1, 0.9))


class SimplePushEnv(MpeEnv):
    """VMAS's MPE ``simple_push`` scenario, batched (see the module's card).

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
        >>> SimplePushEnv(batch_size=[2]).group_map
        {'adversary': ['adversary_0'], 'agent': ['agent_0']}
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
            [
                Body("adversary_0", movable=True, rotatable=True, color=(0.75, 0.25, 0.25)),
                Body("agent_0", movable=True, rotatable=True, color=(0.25, 0.25, 0.25)),
            ],
            [Body(f"landmark {i}", collide=False, color=c) for i, c in enumerate(_LANDMARK_COLORS)],
        )
        super().__init__(
            batch_size,
            device,
            seed,
            world=world,
            teams=[Team("adversary", 1, 8), Team("agent", 1, 19)],
            continuous_actions=continuous_actions,
            categorical_actions=categorical_actions,
            max_steps=max_steps,
            auto_reset_mode=auto_reset_mode,
            **physics,
        )
        colors = torch.tensor(_LANDMARK_COLORS, device=self.device)
        self.register_buffer("_landmark_colors", colors.flatten(), persistent=False)
        # the agent's colour for each goal: grey with +0.5 on the goal's channel
        agent_colors = torch.full((2, 3), 0.25, device=self.device)
        agent_colors[0, 1] += 0.5
        agent_colors[1, 2] += 0.5
        self.register_buffer("_agent_colors", agent_colors, persistent=False)

    def _extra_state(self) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        return {"goal": ((1,), torch.int64)}

    def _start(self, rows: ResetRows) -> dict[str, torch.Tensor]:
        return {"pos": self._uniform_positions(rows, -1.0, 1.0), "goal": rows.randint(0, 2, 1)}

    def _observe(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        pos, vel = self._cols(state["pos"]), self._cols(state["vel"][..., :2, :])  # [4, 2, M], [2, 2, M]
        adv, agent, landmarks = pos[0:1], pos[1:2], pos[2:]
        goal = self._pick(pos[2:], state["goal"])  # [1, 2, M]
        color = self._lookup(self._agent_colors, state["goal"].reshape(-1)).transpose(0, 1).unsqueeze(0)  # [1, 3, M]
        lm_colors = self._landmark_colors.reshape(1, 6, 1).expand(1, 6, color.shape[-1])
        agent_obs = torch.cat(
            [vel[1:2], goal - agent, color, (landmarks - agent).reshape(1, 4, -1), lm_colors, adv - agent], 1
        )
        adv_obs = torch.cat([vel[0:1], (landmarks - adv).reshape(1, 4, -1), agent - adv], 1)
        return [self._rows_of(adv_obs), self._rows_of(agent_obs)]

    def _reward(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        pos = self._cols(state["pos"])
        dist = self._norm(pos[:2] - self._pick(pos[2:], state["goal"]), 1)  # [2, M]
        return [self._agents_of(dist[1:2] - dist[0:1]), self._agents_of(-dist[1:2])]
