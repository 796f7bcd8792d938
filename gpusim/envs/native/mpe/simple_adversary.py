"""MPE ``simple_adversary``: good agents guard a goal landmark that the adversary must guess.

Environment card
----------------
Source:
    VMAS 1.5 ``vmas/scenarios/mpe/simple_adversary.py`` (MPE "physical deception", Lowe et al.
    2017); physics of :mod:`gpusim.envs.native.mpe._world`.
Entities:
    ``adversary_0 ..`` then ``agent_0 ..`` (all movable, radius 0.15, no contacts) and
    ``n_agents - 1`` landmarks (fixed, radius 0.08, no contacts), one of which is the goal.
Groups:
    ``"adversary"`` and ``"agent"``.
Observation (float32):
    good agents: the goal's position relative to the agent, the landmarks' relative positions,
    the other agents' relative positions (agent order); adversaries: the same without the goal
    (2 numbers shorter).
Action:
    continuous ``[..., 2]`` in ``[-1, 1]`` or discrete ``Categorical(9)``.
Reward (float32 ``[..., 1]``):
    adversary: minus its distance to the goal; good agents (shared): minus the smallest good
    agent's distance to the goal plus the sum of the adversaries' distances to it.
Start state:
    agents and landmarks uniform in ``[-1, 1]^2``; the goal a uniform landmark of each row.
Episode end:
    never terminated; ``truncated`` after ``max_steps`` steps when given.
Arguments:
    ``n_agents=3`` (adversaries included), ``n_adversaries=1``, and ``continuous_actions``,
    ``categorical_actions``, ``max_steps``.
Differences from VMAS:
    the goal is drawn per row and per episode (state entry ``"goal"``); VMAS draws one goal for
    all its envs at a full reset and keeps it on per-env resets.

Examples:
    >>> env = SimpleAdversaryEnv(batch_size=[8], seed=0)
    >>> env.group_map
    {'adversary': ['adversary_0'], 'agent': ['agent_0', 'agent_1']}
    >>> env.rollout(5)["next", "agent", "observation"].shape
    torch.Size([8, 5, 2, 10])
"""

from __future__ import annotations

from typing import Any

import torch

from gpusim.envs.native.mpe._env import MpeEnv, Team, check_count, off_diagonal
from gpusim.envs.native.mpe._world import Body, ParticleWorld
from gpusim.envs.native.rng import ResetRows

__all__ = ["SimpleAdversaryEnv"]


class SimpleAdversaryEnv(MpeEnv):
    """VMAS's MPE ``simple_adversary`` scenario, batched (see the module's card).

    Args:
        batch_size: the batch dims.
        device: where the data lives.
        seed: seed of the env's random numbers.

    Keyword Args:
        n_agents: all agents, adversaries included (``> n_adversaries``).
        n_adversaries: adversaries.
        continuous_actions: continuous or discrete actions.
        categorical_actions: discrete actions as indices or one-hot.
        max_steps: horizon (``None``: none).
        auto_reset_mode: ``"sparse"`` or ``"masked"``.
        **physics: the world's constants ``dt``, ``drag``, ``collision_force``, ``contact_margin``,
            ``mass_scale``, ``force_scale`` (numbers or ``[*B]`` tensors), ``randomize`` and
            ``expose_params``: see :class:`~gpusim.envs.native.mpe.MpeEnv`.

    Examples:
        >>> env = SimpleAdversaryEnv(batch_size=[2], n_agents=4, n_adversaries=2)
        >>> env.observation_spec["adversary", "observation"].shape
        torch.Size([2, 2, 12])
    """

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        n_agents: int = 3,
        n_adversaries: int = 1,
        continuous_actions: bool = True,
        categorical_actions: bool = True,
        max_steps: int | None = None,
        auto_reset_mode: str | None = None,
        **physics: Any,
    ) -> None:
        A = check_count("n_adversaries", n_adversaries, 1)
        n = check_count("n_agents", n_agents, A + 1)
        self.n_adversaries, self.num_landmarks = A, n - 1
        L = n - 1
        red, blue, black = (0.75, 0.25, 0.25), (0.25, 0.25, 0.75), (0.15, 0.15, 0.15)
        agents = [
            Body(
                f"adversary_{i}" if i < A else f"agent_{i - A}",
                movable=True,
                rotatable=True,
                radius=0.15,
                collide=False,
                color=red if i < A else blue,
            )
            for i in range(n)
        ]
        world = ParticleWorld(
            agents, [Body(f"landmark {i}", radius=0.08, collide=False, color=black) for i in range(L)]
        )
        adv_dim = 2 * L + 2 * (n - 1)
        super().__init__(
            batch_size,
            device,
            seed,
            world=world,
            teams=[Team("adversary", A, adv_dim), Team("agent", n - A, adv_dim + 2)],
            continuous_actions=continuous_actions,
            categorical_actions=categorical_actions,
            max_steps=max_steps,
            auto_reset_mode=auto_reset_mode,
            **physics,
        )

    def _extra_state(self) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        return {"goal": ((1,), torch.int64)}

    def _start(self, rows: ResetRows) -> dict[str, torch.Tensor]:
        pos = self._uniform_positions(rows, -1.0, 1.0)
        return {"pos": pos, "goal": rows.randint(0, self.num_landmarks, 1)}

    def _observe(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        n, A = self.n_agents, self.n_adversaries
        pos = self._cols(state["pos"])  # [n_entities, 2, M]
        agents = pos[:n]
        rel = pos.unsqueeze(0) - agents.unsqueeze(1)  # [n, n_entities, 2, M]
        seen = torch.cat([rel[:, n:].flatten(1, 2), off_diagonal(rel[:, :n]).flatten(1, 2)], 1)
        goal = self._pick(pos[n:], state["goal"]) - agents[A:]  # [n - A, 2, M]
        return [self._rows_of(seen[:A]), self._rows_of(torch.cat([goal, seen[A:]], 1))]

    def _reward(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        n, A = self.n_agents, self.n_adversaries
        pos = self._cols(state["pos"])
        dist = self._norm(pos[:n] - self._pick(pos[n:], state["goal"]), 1)  # [n, M]
        good = dist[:A].sum(0) - dist[A:].amin(0)  # [M]
        return [self._agents_of(-dist[:A]), self._agents_of(good.unsqueeze(0).expand(n - A, -1))]
