"""MPE ``simple_reference``: two talking agents each guide the other to a landmark only it knows.

Environment card
----------------
Source:
    VMAS 1.5 ``vmas/scenarios/mpe/simple_reference.py`` (MPE "cooperative communication" with
    two speaking listeners, Lowe et al. 2017); physics of :mod:`gpusim.envs.native.mpe._world`.
Entities:
    ``agent_0``, ``agent_1`` (movable, no contacts, speaking on ``dim_c = 10`` channels) and three
    landmarks (fixed, no contacts) coloured red, green and blue (``0.75``/``0.25``).
Groups:
    ``"agents"``.
Observation (float32 ``[*B, 2, 21]``):
    the agent's velocity, the landmarks' relative positions, the colour of the landmark the
    *other* agent must reach (the agent's own ``goal``), and the other agent's last message.
Action:
    continuous ``[*B, 2, 12]``: force in ``[-1, 1]^2`` then the message in ``[0, 1]^10``; discrete
    ``Categorical(90)`` (``9`` moves times ``10`` one-hot messages, see
    :mod:`gpusim.envs.native.mpe._env`).
Reward (float32 ``[*B, 2, 1]``, shared):
    minus the sum over agents of the distance from the other agent to this agent's goal landmark.
Start state:
    agents and landmarks uniform in ``[-1, 1]^2``; each agent's goal a uniform landmark of each
    row; messages zero.
Episode end:
    never terminated; ``truncated`` after ``max_steps`` steps when given.
Arguments:
    ``continuous_actions``, ``categorical_actions``, ``max_steps``.
Differences from VMAS:
    the goals are drawn per row and per episode (state entry ``"goal"``, ``[*B, 2]``); VMAS draws
    them once for all its envs at a full reset.

Examples:
    >>> env = SimpleReferenceEnv(batch_size=[8], seed=0)
    >>> env.rollout(5)["next", "agents", "observation"].shape
    torch.Size([8, 5, 2, 21])
"""

from __future__ import annotations

from typing import Any

import torch

from gpusim.envs.native.mpe._env import MpeEnv, Team
from gpusim.envs.native.mpe._world import Body, ParticleWorld
from gpusim.envs.native.rng import ResetRows

__all__ = ["SimpleReferenceEnv"]

_LANDMARK_COLORS = ((0.75, 0.25, 0.25), (0.25, 0.75, 0.25), (0.25, 0.25, 0.75))


class SimpleReferenceEnv(MpeEnv):
    """VMAS's MPE ``simple_reference`` scenario, batched (see the module's card).

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
        >>> SimpleReferenceEnv(batch_size=[2], continuous_actions=False).action_spec.space.n
        90
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
            [Body(f"agent_{i}", movable=True, rotatable=True, collide=False, silent=False) for i in range(2)],
            [Body(f"landmark {i}", collide=False, color=c) for i, c in enumerate(_LANDMARK_COLORS)],
            dim_c=10,
        )
        super().__init__(
            batch_size,
            device,
            seed,
            world=world,
            teams=[Team("agent", 2, 21, silent=False)],
            continuous_actions=continuous_actions,
            categorical_actions=categorical_actions,
            max_steps=max_steps,
            auto_reset_mode=auto_reset_mode,
            **physics,
        )
        self.register_buffer("_landmark_colors", torch.tensor(_LANDMARK_COLORS, device=self.device), persistent=False)

    def _extra_state(self) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        return {"goal": ((2,), torch.int64)}

    def _start(self, rows: ResetRows) -> dict[str, torch.Tensor]:
        return {"pos": self._uniform_positions(rows, -1.0, 1.0), "goal": rows.randint(0, 3, 2)}

    def _observe(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        pos, vel, c = self._cols(state["pos"]), self._cols(state["vel"][..., :2, :]), self._cols(state["c"])
        rel = (pos[2:].unsqueeze(0) - pos[:2].unsqueeze(1)).flatten(1, 2)  # [2, 6, M]
        color = self._lookup(self._landmark_colors, state["goal"].reshape(-1, 2)).permute(1, 2, 0)  # [2, 3, M]
        return [self._rows_of(torch.cat([vel, rel, color, c.flip(0)], 1))]

    def _reward(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        pos = self._cols(state["pos"])
        target = self._pick(pos[2:], state["goal"])  # [2, 2, M]: the goal of agent i
        dist = self._norm(pos[:2].flip(0) - target, 1)  # the other agent to my goal
        shared = -dist.sum(0, keepdim=True)
        return [self._agents_of(shared.expand(2, -1))]
