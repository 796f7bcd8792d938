"""MPE ``simple_spread``: N agents cover N landmarks without colliding (cooperative).

Environment card
----------------
Source:
    VMAS 1.5 ``vmas/scenarios/mpe/simple_spread.py`` (MPE "cooperative navigation", Lowe et al.
    2017); physics of :mod:`gpusim.envs.native.mpe._world`.
Entities:
    ``agent_0 .. agent_{N-1}`` (movable, radius 0.15, colliding with each other) and
    ``landmark 0 .. landmark {N-1}`` (fixed, no contacts).
Groups:
    ``"agents"`` (all N).
Observation (float32 ``[*B, N, 4 + 2N (+ 2(N-1))]``):
    the agent's position and velocity, the landmarks' positions relative to it, and (with
    ``obs_agents=True``) the other agents' relative positions, in agent order.
Action:
    continuous ``[*B, N, 2]`` in ``[-1, 1]`` or discrete ``Categorical(9)``.
Reward (float32 ``[*B, N, 1]``, shared):
    ``-N * sum_l min_a |a - l|`` minus one per ordered pair of overlapping agents
    (``|a - b| < 0.3``). The factor N is VMAS's (its landmark sum sits inside its agent loop).
Start state:
    agents and landmarks uniform in ``[-1, 1]^2``; velocities zero.
Episode end:
    never terminated; ``truncated`` after ``max_steps`` steps when given.
Arguments:
    ``n_agents=3`` (also the number of landmarks), ``obs_agents=True``, and
    ``continuous_actions=True``, ``categorical_actions=True``, ``max_steps=None``.

Examples:
    >>> env = SimpleSpreadEnv(batch_size=[8], seed=0)
    >>> env.rollout(5)["next", "agents", "observation"].shape
    torch.Size([8, 5, 3, 14])
"""

from __future__ import annotations

from typing import Any

import torch

from gpusim.envs.native.mpe._env import MpeEnv, Team, check_bool, check_count, off_diagonal
from gpusim.envs.native.mpe._world import Body, ParticleWorld
from gpusim.envs.native.rng import ResetRows

__all__ = ["SimpleSpreadEnv"]


class SimpleSpreadEnv(MpeEnv):
    """VMAS's MPE ``simple_spread`` scenario, batched (see the module's card).

    Args:
        batch_size: the batch dims.
        device: where the data lives.
        seed: seed of the env's random numbers.

    Keyword Args:
        n_agents: number of agents and landmarks.
        obs_agents: whether agents observe the others' relative positions.
        continuous_actions: continuous or discrete actions.
        categorical_actions: discrete actions as indices or one-hot.
        max_steps: horizon (``None``: none).
        auto_reset_mode: ``"sparse"`` or ``"masked"``.
        **physics: the world's constants ``dt``, ``drag``, ``collision_force``, ``contact_margin``,
            ``mass_scale``, ``force_scale`` (numbers or ``[*B]`` tensors), ``randomize`` and
            ``expose_params``: see :class:`~gpusim.envs.native.mpe.MpeEnv`.

    Examples:
        >>> env = SimpleSpreadEnv(batch_size=[2], n_agents=2, obs_agents=False)
        >>> env.observation_spec["agents", "observation"].shape
        torch.Size([2, 2, 8])
    """

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        n_agents: int = 3,
        obs_agents: bool = True,
        continuous_actions: bool = True,
        categorical_actions: bool = True,
        max_steps: int | None = None,
        auto_reset_mode: str | None = None,
        **physics: Any,
    ) -> None:
        n = check_count("n_agents", n_agents, 1)
        self.obs_agents = check_bool("obs_agents", obs_agents)
        world = ParticleWorld(
            [Body(f"agent_{i}", movable=True, rotatable=True, radius=0.15, color=(0.25, 0.25, 0.75)) for i in range(n)],
            [Body(f"landmark {i}", collide=False, color=(0.15, 0.15, 0.15)) for i in range(n)],
        )
        obs_dim = 4 + 2 * n + (2 * (n - 1) if obs_agents else 0)
        super().__init__(
            batch_size,
            device,
            seed,
            world=world,
            teams=[Team("agent", n, obs_dim)],
            continuous_actions=continuous_actions,
            categorical_actions=categorical_actions,
            max_steps=max_steps,
            auto_reset_mode=auto_reset_mode,
            **physics,
        )

    def _start(self, rows: ResetRows) -> dict[str, torch.Tensor]:
        return {"pos": self._uniform_positions(rows, -1.0, 1.0)}

    def _observe(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        # computed with the batch innermost (see ParticleWorld.to_columns), converted back once
        n, world = self.n_agents, self.world
        pos = world.to_columns(state["pos"])  # [n_entities, 2, M]
        agents = pos[:n]
        rel = pos.unsqueeze(0) - agents.unsqueeze(1)  # [n, n_entities, 2, M]: entity - agent
        parts = [agents, world.to_columns(state["vel"][..., :n, :]), rel[:, n:].flatten(1, 2)]
        if self.obs_agents:
            parts.append(off_diagonal(rel[:, :n]).flatten(1, 2))
        return [world.from_columns(torch.cat(parts, 1), state["pos"].shape[:-2])]

    def _reward(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        n = self.n_agents
        pos = self.world.to_columns(state["pos"])
        agents, landmarks = pos[:n], pos[n:]

        def norm(d: torch.Tensor) -> torch.Tensor:
            return (d[:, :, 0].square() + d[:, :, 1].square()).sqrt()

        cover = norm(landmarks.unsqueeze(1) - agents.unsqueeze(0)).amin(1).sum(0) * n  # [M]
        gap = norm(agents.unsqueeze(1) - agents.unsqueeze(0))  # [n, n, M]
        radius = self.world.bodies[0].radius
        overlaps = ((gap - radius) - radius < 0).sum((0, 1)) - n  # the diagonal always overlaps
        shared = -cover - overlaps.to(torch.float32)  # [M]
        # one dense [n, M] copy, the batch innermost (compiled, the rows' rewards are then stored
        # by one vectorized loop per agent, not three lanes per row)
        return [self._agents_of(shared.unsqueeze(0).expand(n, -1).contiguous())]
