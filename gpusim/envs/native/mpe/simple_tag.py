"""MPE ``simple_tag``: faster good agents flee slower adversaries among obstacles (predator-prey).

Environment card
----------------
Source:
    VMAS 1.5 ``vmas/scenarios/mpe/simple_tag.py`` (MPE "predator-prey", Lowe et al. 2017);
    physics of :mod:`gpusim.envs.native.mpe._world`.
Entities:
    ``adversary_0 ..`` (radius 0.075, action force x3, max speed 1.0) then ``agent_0 ..``
    (radius 0.05, force x4, max speed 1.3), all movable and colliding; ``landmark 0 ..`` (fixed
    obstacles, radius 0.2, colliding). The world is walled at ``[-bound, bound]^2``, steps in 10
    substeps and has contact stiffness 500.
Groups:
    ``"adversary"`` and ``"agent"`` (their observations differ in length).
Observation (float32):
    own velocity (``observe_vel``), own position (``observe_pos``), landmarks' relative
    positions, then the other agents' relative positions in agent order (an agent sees its own
    team only with ``observe_same_team``), then the velocities of the good agents among them.
Action:
    continuous ``[..., 2]`` in ``[-1, 1]`` or discrete ``Categorical(9)``.
Reward (float32 ``[..., 1]``):
    an adversary gets ``+10`` per good agent it touches (``|a - b| < r_a + r_b``), minus
    ``0.1 *`` the distance to the nearest good agent with ``shape_adversary_rew``; a good agent
    gets ``-10`` per adversary touching it, plus ``0.1 *`` the sum of its distances to the
    adversaries with ``shape_agent_rew``. With ``adversaries_share_rew`` (default) every
    adversary gets the adversaries' sum; with ``agents_share_rew`` every good agent the good
    agents' sum.
Start state:
    agents uniform in ``[-bound, bound]^2``, landmarks in ``[-(bound - 0.1), bound - 0.1]^2``.
Episode end:
    never terminated; ``truncated`` after ``max_steps`` steps when given.
Arguments:
    ``num_good_agents=1``, ``num_adversaries=3``, ``num_landmarks=2``, ``shape_agent_rew=False``,
    ``shape_adversary_rew=False``, ``agents_share_rew=False``, ``adversaries_share_rew=True``,
    ``observe_same_team=True``, ``observe_pos=True``, ``observe_vel=True``, ``bound=1.0``,
    ``respawn_at_catch=False``, and ``continuous_actions``, ``categorical_actions``,
    ``max_steps``.
Differences from VMAS:
    with ``respawn_at_catch=True`` a caught good agent moves to one fresh uniform position (from
    the step stream of the counter-based generator) when any adversary touches it; VMAS redraws
    once per touching adversary, testing each after the previous redraw.

Examples:
    >>> env = SimpleTagEnv(batch_size=[8], seed=0)
    >>> env.group_map
    {'adversary': ['adversary_0', 'adversary_1', 'adversary_2'], 'agent': ['agent_0']}
    >>> env.rollout(5)["next", "adversary", "observation"].shape
    torch.Size([8, 5, 3, 16])
"""

from __future__ import annotations

from typing import Any

import torch

from gpusim.envs.native._checks import check_positive
from gpusim.envs.native.mpe._env import MpeEnv, Team, check_bool, check_count, off_diagonal, others
from gpusim.envs.native.mpe._world import Body, ParticleWorld
from gpusim.envs.native.rng import ResetRows

__all__ = ["SimpleTagEnv"]


class SimpleTagEnv(MpeEnv):
    """VMAS's MPE ``simple_tag`` scenario, batched (see the module's card).

    Args:
        batch_size: the batch dims.
        device: where the data lives.
        seed: seed of the env's random numbers.

    Keyword Args:
        num_good_agents: good agents (prey).
        num_adversaries: adversaries (predators).
        num_landmarks: obstacles.
        shape_agent_rew: add the good agents' distance shaping.
        shape_adversary_rew: add the adversaries' distance shaping.
        agents_share_rew: good agents share their summed reward.
        adversaries_share_rew: adversaries share their summed reward.
        observe_same_team: agents observe their own team's positions (and good agents' velocities).
        observe_pos: agents observe their own position.
        observe_vel: agents observe their own velocity.
        bound: half-width of the walled arena.
        respawn_at_catch: a caught good agent reappears at a random position.
        continuous_actions: continuous or discrete actions.
        categorical_actions: discrete actions as indices or one-hot.
        max_steps: horizon (``None``: none).
        auto_reset_mode: ``"sparse"`` or ``"masked"``.
        **physics: the world's constants ``dt``, ``drag``, ``collision_force``, ``contact_margin``,
            ``mass_scale``, ``force_scale`` (numbers or ``[*B]`` tensors), ``randomize`` and
            ``expose_params``: see :class:`~gpusim.envs.native.mpe.MpeEnv`.

    Examples:
        >>> env = SimpleTagEnv(batch_size=[2], num_good_agents=2, num_adversaries=2, num_landmarks=1)
        >>> env.observation_spec["agent", "observation"].shape
        torch.Size([2, 2, 14])
    """

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        num_good_agents: int = 1,
        num_adversaries: int = 3,
        num_landmarks: int = 2,
        shape_agent_rew: bool = False,
        shape_adversary_rew: bool = False,
        agents_share_rew: bool = False,
        adversaries_share_rew: bool = True,
        observe_same_team: bool = True,
        observe_pos: bool = True,
        observe_vel: bool = True,
        bound: float = 1.0,
        respawn_at_catch: bool = False,
        continuous_actions: bool = True,
        categorical_actions: bool = True,
        max_steps: int | None = None,
        auto_reset_mode: str | None = None,
        **physics: Any,
    ) -> None:
        G = check_count("num_good_agents", num_good_agents, 1)
        A = check_count("num_adversaries", num_adversaries, 1)
        L = check_count("num_landmarks", num_landmarks, 0)
        for name, value in (
            ("shape_agent_rew", shape_agent_rew),
            ("shape_adversary_rew", shape_adversary_rew),
            ("agents_share_rew", agents_share_rew),
            ("adversaries_share_rew", adversaries_share_rew),
            ("observe_same_team", observe_same_team),
            ("observe_pos", observe_pos),
            ("observe_vel", observe_vel),
            ("respawn_at_catch", respawn_at_catch),
        ):
            setattr(self, name, check_bool(name, value))
        self.bound = check_positive("bound", bound)
        self.num_good_agents, self.num_adversaries, self.num_landmarks = G, A, L
        red, green, black = (0.75, 0.25, 0.25), (0.25, 0.75, 0.25), (0.15, 0.15, 0.15)
        adversaries = [
            Body(
                f"adversary_{i}", movable=True, rotatable=True, radius=0.075, u_multiplier=3.0, max_speed=1.0, color=red
            )
            for i in range(A)
        ]
        good = [
            Body(f"agent_{i}", movable=True, rotatable=True, radius=0.05, u_multiplier=4.0, max_speed=1.3, color=green)
            for i in range(G)
        ]
        landmarks = [Body(f"landmark {i}", radius=0.2, color=black) for i in range(L)]
        world = ParticleWorld(
            [*adversaries, *good],
            landmarks,
            substeps=10,
            collision_force=500.0,
            x_semidim=self.bound,
            y_semidim=self.bound,
        )
        own = 2 * (int(observe_vel) + int(observe_pos)) + 2 * L
        same = int(observe_same_team)
        adv_dim = own + 2 * (A - 1) * same + 4 * G
        good_dim = own + 2 * A + 4 * (G - 1) * same
        super().__init__(
            batch_size,
            device,
            seed,
            world=world,
            teams=[Team("adversary", A, adv_dim), Team("agent", G, good_dim)],
            continuous_actions=continuous_actions,
            categorical_actions=categorical_actions,
            max_steps=max_steps,
            auto_reset_mode=auto_reset_mode,
            **physics,
        )
        n_ag = A + G
        scale = [self.bound] * n_ag + [self.bound - 0.1] * L
        self.register_buffer("_scale", torch.tensor(scale, device=self.device).unsqueeze(-1), persistent=False)
        radii = self.world.radius
        self.register_buffer("_touch", radii[:A].unsqueeze(-1) + radii[A:n_ag], persistent=False)  # [A, G]

    def _start(self, rows: ResetRows) -> dict[str, torch.Tensor]:
        return {"pos": self._uniform_positions(rows, -self._scale, self._scale)}

    def _observe(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        A, G = self.num_adversaries, self.num_good_agents
        n = A + G
        pos, vel = self._cols(state["pos"]), self._cols(state["vel"][..., :n, :])  # columns [k, 2, M]
        M = pos.shape[-1]
        agents = pos[:n]
        rel = pos.unsqueeze(0) - agents.unsqueeze(1)  # [n, n_entities, 2, M]
        own = []
        if self.observe_vel:
            own.append(vel)
        if self.observe_pos:
            own.append(agents)
        own.append(rel[:, n:].flatten(1, 2))
        own = torch.cat(own, 1) if len(own) > 1 else own[0]
        # adversaries: other adversaries' and good agents' positions, good agents' velocities
        adv = [own[:A]]
        if self.observe_same_team:
            adv.append(off_diagonal(rel[:A, :A]).flatten(1, 2))
        adv.append(rel[:A, A:n].flatten(1, 2))
        adv.append(vel[A:n].reshape(1, 2 * G, M).expand(A, 2 * G, M))
        # good agents: adversaries' positions, other good agents' positions and velocities
        good = [own[A:], rel[A:n, :A].flatten(1, 2)]
        if self.observe_same_team and G > 1:
            good.append(off_diagonal(rel[A:n, A:n]).flatten(1, 2))
            good.append(others(vel[A:n]).flatten(1, 2))
        return [self._rows_of(torch.cat(adv, 1)), self._rows_of(torch.cat(good, 1))]

    def _reward(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        A, G = self.num_adversaries, self.num_good_agents
        n = A + G
        cols = self._cols(state["pos"][..., :n, :])
        gap = self._norm(cols[:A].unsqueeze(1) - cols[A:].unsqueeze(0), 2)  # [A, G, M]
        touch = (gap < self._touch.unsqueeze(-1)).to(torch.float32)
        adv = touch.sum(1) * 10.0  # [A, M]
        if self.shape_adversary_rew:
            adv = adv - 0.1 * gap.amin(1)
        good = touch.sum(0) * -10.0  # [G, M]
        if self.shape_agent_rew:
            good = good + 0.1 * gap.sum(0)
        if self.adversaries_share_rew:
            adv = adv.sum(0, keepdim=True).expand(adv.shape)
        if self.agents_share_rew:
            good = good.sum(0, keepdim=True).expand(good.shape)
        adv, good = self._agents_of(adv), self._agents_of(good)
        if self.respawn_at_catch:
            caught = (self._agents_of(touch.sum(0)) > 0).unsqueeze(-1)  # [*B, G, 1]
            pos = state["pos"]
            fresh = self.rng.uniform(-self.bound, self.bound, 2 * G).reshape(*caught.shape[:-2], G, 2)
            pos_good = torch.where(caught, fresh, pos[..., A:n, :])
            vel_good = torch.where(caught, 0.0, state["vel"][..., A:n, :])
            state["pos"] = torch.cat([pos[..., :A, :], pos_good, pos[..., n:, :]], -2)
            state["vel"] = torch.cat([state["vel"][..., :A, :], vel_good, state["vel"][..., n:, :]], -2)
        return [adv, good]
