"""MPE ``simple_speaker_listener``: a fixed speaker tells a listener which landmark to reach.

Environment card
----------------
Source:
    VMAS 1.5 ``vmas/scenarios/mpe/simple_speaker_listener.py`` (MPE "cooperative
    communication", Lowe et al. 2017); physics of :mod:`gpusim.envs.native.mpe._world`.
Entities:
    ``speaker_0`` (immovable, speaking on ``dim_c = 3`` channels) and ``listener_0`` (movable,
    silent), both radius 0.075 without contacts; three landmarks (fixed, radius 0.04) coloured
    ``(0.65, 0.15, 0.15)``, ``(0.15, 0.65, 0.15)``, ``(0.15, 0.15, 0.65)``, one the goal.
Groups:
    ``"speaker"`` and ``"listener"``.
Observation (float32):
    speaker (3): the goal's colour; listener (11): its velocity, the landmarks' relative
    positions, the speaker's last message.
Action:
    speaker: continuous ``[..., 5]`` (a force, ignored: it cannot move, then the message in
    ``[0, 1]^3``) or ``Categorical(27)``; listener: continuous ``[..., 2]`` or ``Categorical(9)``.
Reward (float32 ``[..., 1]``, shared):
    ``-2 *`` the listener's distance to the goal (VMAS adds it once per agent).
Start state:
    agents and landmarks uniform in ``[-1, 1]^2``; the goal a uniform landmark of each row;
    messages zero.
Episode end:
    never terminated; ``truncated`` after ``max_steps`` steps when given.
Arguments:
    ``continuous_actions``, ``categorical_actions``, ``max_steps``.
Differences from VMAS:
    the goal is drawn per row and per episode (state entry ``"goal"``); VMAS draws one for all
    its envs at a full reset.

Examples:
    >>> env = SimpleSpeakerListenerEnv(batch_size=[8], seed=0)
    >>> env.group_map
    {'speaker': ['speaker_0'], 'listener': ['listener_0']}
    >>> env.rollout(5)["next", "listener", "observation"].shape
    torch.Size([8, 5, 1, 11])
"""

from __future__ import annotations

from typing import Any

import torch

from gpusim.envs.native.mpe._env import MpeEnv, Team
from gpusim.envs.native.mpe._world import Body, ParticleWorld
from gpusim.envs.native.rng import ResetRows

__all__ = ["SimpleSpeakerListenerEnv"]

_LANDMARK_COLORS = ((0.65, 0.15, 0.15), (0.15, 0.65, 0.15), (0.15, 0.15, 0.65))


class SimpleSpeakerListenerEnv(MpeEnv):
    """VMAS's MPE ``simple_speaker_listener`` scenario, batched (see the module's card).

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
        >>> env = SimpleSpeakerListenerEnv(batch_size=[2], continuous_actions=False)
        >>> env.full_action_spec["speaker", "action"].space.n
        27
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
                Body("speaker_0", movable=False, rotatable=True, radius=0.075, collide=False, silent=False),
                Body("listener_0", movable=True, rotatable=True, radius=0.075, collide=False),
            ],
            [Body(f"landmark {i}", radius=0.04, collide=False, color=c) for i, c in enumerate(_LANDMARK_COLORS)],
            dim_c=3,
        )
        super().__init__(
            batch_size,
            device,
            seed,
            world=world,
            teams=[Team("speaker", 1, 3, silent=False), Team("listener", 1, 11)],
            continuous_actions=continuous_actions,
            categorical_actions=categorical_actions,
            max_steps=max_steps,
            auto_reset_mode=auto_reset_mode,
            **physics,
        )
        self.register_buffer("_landmark_colors", torch.tensor(_LANDMARK_COLORS, device=self.device), persistent=False)

    def _extra_state(self) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        return {"goal": ((1,), torch.int64)}

    def _start(self, rows: ResetRows) -> dict[str, torch.Tensor]:
        return {"pos": self._uniform_positions(rows, -1.0, 1.0), "goal": rows.randint(0, 3, 1)}

    def _observe(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        pos, vel, c = (
            self._cols(state["pos"]),
            self._cols(state["vel"][..., 1:2, :]),
            self._cols(state["c"][..., 0:1, :]),
        )
        rel = (pos[2:] - pos[1:2]).reshape(1, 6, -1)
        color = self._lookup(self._landmark_colors, state["goal"])  # [*B, 1, 3]
        return [color, self._rows_of(torch.cat([vel, rel, c], 1))]

    def _reward(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        pos = self._cols(state["pos"])
        shared = -2.0 * self._norm(pos[1:2] - self._pick(pos[2:], state["goal"]), 1)  # [1, M]
        shared = self._agents_of(shared)
        return [shared, shared.clone()]
