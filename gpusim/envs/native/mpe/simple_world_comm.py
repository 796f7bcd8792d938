"""MPE ``simple_world_comm``: predators led by a speaking leader hunt prey that forage for food.

Environment card
----------------
Source:
    VMAS 1.5 ``vmas/scenarios/mpe/simple_world_comm.py`` (MPE "world comm", Lowe et al. 2017);
    physics of :mod:`gpusim.envs.native.mpe._world`.
Entities:
    ``lead_adversary_0`` (speaks on ``dim_c = 4`` channels), ``adversary_1 ..`` (radius 0.075,
    force x3, max speed 1.0), ``agent_0 ..`` (radius 0.045, force x4, max speed 1.3), all
    movable and colliding; landmarks: ``num_landmarks`` obstacles (radius 0.2, colliding),
    ``num_food`` food (radius 0.03) and ``num_forests`` forests (radius 0.3), the last two
    without contacts. The world is walled at ``[-1, 1]^2``.
Groups:
    ``"lead_adversary"``, ``"adversary"`` and ``"agent"``.
Observation (float32):
    own velocity and position, every landmark's relative position (obstacles, food, forests),
    then for each other agent and each forest a relative position and a velocity block (each
    ``2 (n_agents - 1) num_forests`` long), then ``num_forests`` entries ``-1``, then (adversaries
    and leader) the leader's last message. As in VMAS 1.5, the forest visibility tests never
    write their results: the leader sees every other agent (relative positions; good agents'
    velocities, zeros for adversaries) in every forest block, the other agents see zeros there,
    and the in-forest entries stay ``-1``.
Action:
    leader: continuous ``[..., 6]`` (force, then the message in ``[0, 1]^4``) or
    ``Categorical(36)``; the others: ``[..., 2]`` or ``Categorical(9)``.
Reward (float32 ``[..., 1]``):
    good agent: ``-5`` per adversary touching it, ``+2`` per food it touches, minus ``0.05 *``
    its distance to the nearest food; adversaries (each): ``+5`` per touching (good agent,
    adversary) pair. Touching is ``|a - b| < r_a + r_b``.
Start state:
    agents uniform in ``[-1, 1]^2``, landmarks (all kinds) in ``[-0.9, 0.9]^2``.
Episode end:
    never terminated; ``truncated`` after ``max_steps`` steps when given.
Arguments:
    ``num_good_agents=2``, ``num_adversaries=4`` (the leader included), ``num_landmarks=1``,
    ``num_food=2``, ``num_forests=2``, and ``continuous_actions``, ``categorical_actions``,
    ``max_steps``.

Examples:
    >>> env = SimpleWorldCommEnv(batch_size=[8], seed=0)
    >>> env.group_map["lead_adversary"], env.group_map["agent"]
    (['lead_adversary_0'], ['agent_0', 'agent_1'])
    >>> env.rollout(5)["next", "adversary", "observation"].shape
    torch.Size([8, 5, 3, 60])
"""

from __future__ import annotations

from typing import Any

import torch

from gpusim.envs.native.mpe._env import MpeEnv, Team, check_count, off_diagonal, others
from gpusim.envs.native.mpe._world import Body, ParticleWorld
from gpusim.envs.native.rng import ResetRows

__all__ = ["SimpleWorldCommEnv"]


class SimpleWorldCommEnv(MpeEnv):
    """VMAS's MPE ``simple_world_comm`` scenario, batched (see the module's card).

    Args:
        batch_size: the batch dims.
        device: where the data lives.
        seed: seed of the env's random numbers.

    Keyword Args:
        num_good_agents: good agents (prey).
        num_adversaries: adversaries, the leader included.
        num_landmarks: obstacles.
        num_food: food landmarks.
        num_forests: forest landmarks.
        continuous_actions: continuous or discrete actions.
        categorical_actions: discrete actions as indices or one-hot.
        max_steps: horizon (``None``: none).
        auto_reset_mode: ``"sparse"`` or ``"masked"``.
        **physics: the world's constants ``dt``, ``drag``, ``collision_force``, ``contact_margin``,
            ``mass_scale``, ``force_scale`` (numbers or ``[*B]`` tensors), ``randomize`` and
            ``expose_params``: see :class:`~gpusim.envs.native.mpe.MpeEnv`.

    Examples:
        >>> env = SimpleWorldCommEnv(batch_size=[2], num_adversaries=1, num_forests=1)
        >>> sorted(env.group_map)
        ['agent', 'lead_adversary']
    """

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        num_good_agents: int = 2,
        num_adversaries: int = 4,
        num_landmarks: int = 1,
        num_food: int = 2,
        num_forests: int = 2,
        continuous_actions: bool = True,
        categorical_actions: bool = True,
        max_steps: int | None = None,
        auto_reset_mode: str | None = None,
        **physics: Any,
    ) -> None:
        G = check_count("num_good_agents", num_good_agents, 1)
        A = check_count("num_adversaries", num_adversaries, 1)
        L = check_count("num_landmarks", num_landmarks, 0)
        Fd = check_count("num_food", num_food, 1)
        Fo = check_count("num_forests", num_forests, 1)
        self.num_good_agents, self.num_adversaries = G, A
        self.num_landmarks, self.num_food, self.num_forests = L, Fd, Fo
        n = A + G
        agents = []
        for i in range(n):
            adversary, leader = i < A, i == 0
            name = "lead_adversary_0" if leader else (f"adversary_{i}" if adversary else f"agent_{i - A}")
            color = (0.95, 0.45, 0.45) if adversary else (0.45, 0.95, 0.45)
            if leader:
                color = tuple(c - 0.3 for c in color)
            agents.append(
                Body(
                    name,
                    movable=True,
                    rotatable=True,
                    radius=0.075 if adversary else 0.045,
                    u_multiplier=3.0 if adversary else 4.0,
                    max_speed=1.0 if adversary else 1.3,
                    silent=not leader,
                    color=color,
                )
            )
        landmarks = (
            [Body(f"landmark {i}", radius=0.2, color=(0.25, 0.25, 0.25)) for i in range(L)]
            + [Body(f"food {i}", radius=0.03, collide=False, color=(0.15, 0.15, 0.65)) for i in range(Fd)]
            + [Body(f"forest {i}", radius=0.3, collide=False, color=(0.6, 0.9, 0.6)) for i in range(Fo)]
        )
        world = ParticleWorld(agents, landmarks, x_semidim=1.0, y_semidim=1.0, dim_c=4)
        base = 4 + 2 * (L + Fd + Fo) + 4 * (n - 1) * Fo + Fo
        teams = [Team("lead_adversary", 1, base + 4, silent=False)]
        if A > 1:
            teams.append(Team("adversary", A - 1, base + 4, names=tuple(f"adversary_{i}" for i in range(1, A))))
        teams.append(Team("agent", G, base))
        super().__init__(
            batch_size,
            device,
            seed,
            world=world,
            teams=teams,
            continuous_actions=continuous_actions,
            categorical_actions=categorical_actions,
            max_steps=max_steps,
            auto_reset_mode=auto_reset_mode,
            **physics,
        )
        scale = [1.0] * n + [0.9] * len(landmarks)
        self.register_buffer("_scale", torch.tensor(scale, device=self.device).unsqueeze(-1), persistent=False)
        radius = self.world.radius
        self.register_buffer("_touch", radius[:A].unsqueeze(-1) + radius[A:n], persistent=False)  # [A, G]
        food = radius[n + L : n + L + Fd]
        self.register_buffer("_food_touch", radius[A:n].unsqueeze(-1) + food, persistent=False)  # [G, Fd]
        leader = torch.zeros(n, 1, 1, device=self.device)
        leader[0] = 1.0
        self.register_buffer("_leader", leader, persistent=False)
        # velocities the leader sees: good agents' (adversaries' are zeros)
        self.register_buffer(
            "_good", (torch.arange(n, device=self.device) >= A).to(torch.float32).unsqueeze(-1), persistent=False
        )

    def _start(self, rows: ResetRows) -> dict[str, torch.Tensor]:
        return {"pos": self._uniform_positions(rows, -self._scale, self._scale)}

    def _observe(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        A, n, Fo = self.num_adversaries, self.n_agents, self.num_forests
        pos, vel = self._cols(state["pos"]), self._cols(state["vel"][..., :n, :])  # columns [k, 2, M]
        M = pos.shape[-1]
        agents = pos[:n]
        rel = pos.unsqueeze(0) - agents.unsqueeze(1)  # [n, n_entities, 2, M]
        lead = self._leader.unsqueeze(-1)  # [n, 1, 1, 1]: only the leader sees the others
        other_pos = off_diagonal(rel[:, :n]) * lead  # [n, n-1, 2, M]
        other_vel = others(vel * self._good.unsqueeze(-1)) * lead
        # each other agent's block is repeated once per forest
        other_pos = other_pos.unsqueeze(2).expand(n, n - 1, Fo, 2, M).reshape(n, -1, M)
        other_vel = other_vel.unsqueeze(2).expand(n, n - 1, Fo, 2, M).reshape(n, -1, M)
        in_forest = pos.new_full((n, Fo, M), -1.0)
        common = torch.cat([vel, agents, rel[:, n:].flatten(1, 2), other_pos, other_vel, in_forest], 1)
        comm = self._cols(state["c"][..., :1, :]).expand(A, -1, M)
        adversaries = torch.cat([common[:A], comm], 1)
        out = [self._rows_of(adversaries[:1])]
        if A > 1:
            out.append(self._rows_of(adversaries[1:]))
        out.append(self._rows_of(common[A:]))
        return out

    def _reward(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        A, n, L, Fd = self.num_adversaries, self.n_agents, self.num_landmarks, self.num_food
        pos = self._cols(state["pos"])
        gap = self._norm(pos[:A].unsqueeze(1) - pos[A:n].unsqueeze(0), 2)  # [A, G, M]
        touch = (gap < self._touch.unsqueeze(-1)).to(torch.float32)
        food = pos[n + L : n + L + Fd]
        food_gap = self._norm(pos[A:n].unsqueeze(1) - food.unsqueeze(0), 2)  # [G, Fd, M]
        eats = (food_gap < self._food_touch.unsqueeze(-1)).to(torch.float32).sum(1)
        good = -5.0 * touch.sum(0) + 2.0 * eats - 0.05 * food_gap.amin(1)  # [G, M]
        adv = self._agents_of((5.0 * touch.sum((0, 1))).unsqueeze(0).expand(A, -1))
        out = [adv[..., :1]]
        if A > 1:
            out.append(adv[..., 1:])
        out.append(self._agents_of(good))
        return out
