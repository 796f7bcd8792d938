"""The particle world of the MPE scenarios: every entity, pair and row of a batch in one program.

State layout: ``pos`` and ``vel`` are float32 ``[*B, n_entities, 2]`` with the agents first (in
VMAS's agent order) and the landmarks after them; ``c`` (communication) is float32
``[*B, n_agents, dim_c]`` when ``dim_c > 0``. The world computes in "columns" (``[n, 2, rows]``,
the batch innermost, :meth:`ParticleWorld.to_columns`) and returns views of its columns, so the
state (and the observations built the same way) keep the batch innermost in memory from step to
step (strided ``[*B, n, 2]`` tensors; values and shapes are the same as contiguous ones).

The rules are VMAS 1.5's (``vmas.simulator.core.World.step`` for holonomic sphere entities),
re-derived as batched tensor operations:

* each physical substep (``substeps`` per step, ``sub_dt = dt / substeps``) the force on a movable
  agent is its action ``u`` (the policy's action in ``[-u_range, u_range]``, times
  ``u_multiplier``) plus the contact forces of every colliding pair;
* a contact between spheres ``a`` and ``b`` at distance ``d`` (``delta = pos_a - pos_b``) pushes
  ``a`` with ``collision_force * delta / d * k * softplus((r_a + r_b - d) / k)`` (``k`` is the
  contact margin) and ``b`` with the opposite force; it is zero when ``d > r_a + r_b`` or
  ``d < 1e-6``. A pair collides when both entities collide and one of them moves or rotates
  (agents rotate, landmarks do not); only movable entities feel forces;
* integration is semi-implicit Euler: at the first substep the velocity is damped by
  ``1 - drag``; then ``vel += force / mass * sub_dt``, the velocity is rescaled to ``max_speed``
  when its norm exceeds it, ``pos += vel * sub_dt`` and the position is clamped to the world's
  semi-dimensions when it has them.

Landmarks never move (no MPE scenario has a movable one), so only the agents are integrated. The
contacts are two batched computations: each unordered pair of agents once (``[P, 2, M]``, its
force added to the first agent and subtracted from the second through a constant incidence
matrix, as VMAS applies a pair's force to both bodies), and every agent against every colliding
landmark (``[n_agents, n_hits, 2, M]``); equal to VMAS's pairwise sums up to float rounding.

Examples:
    >>> import torch
    >>> world = ParticleWorld([Body("agent_0", movable=True, radius=0.15),
    ...                        Body("agent_1", movable=True, radius=0.15)], [])
    >>> pos = torch.tensor([[[0.0, 0.0], [0.2, 0.0]]])
    >>> vel = torch.zeros(1, 2, 2)
    >>> new_pos, new_vel = world.step(pos, vel, torch.zeros(1, 2, 2))
    >>> bool(new_vel[0, 0, 0] < 0) and bool(new_vel[0, 1, 0] > 0)  # pushed apart
    True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import torch

from gpusim.kernels._inductor import realized

__all__ = ["COLLISION_FORCE", "DRAG", "Body", "ParticleWorld"]

#: VMAS's world defaults
DRAG = 0.25
COLLISION_FORCE = 100.0
CONTACT_MARGIN = 1e-3
_MIN_DIST = 1e-6
#: a constant of the physics: the same number for every row, or a ``[M]`` / ``[*B]`` tensor
Number = float | torch.Tensor


def _is_one(value: Number) -> bool:
    """Whether a constant is the Python number 1 (a tensor never is: its values are per row)."""
    return not isinstance(value, torch.Tensor) and value == 1.0


@dataclasses.dataclass(frozen=True)
class Body:
    """One entity of a particle world (a sphere).

    Args:
        name: VMAS's name (``"agent_0"``, ``"landmark 0"``).
        movable: whether forces move it (VMAS: agents yes, landmarks no).
        radius: sphere radius.
        collide: whether it takes part in contacts.
        mass: its mass.
        max_speed: velocity norm cap (``None``: none).
        rotatable: whether it rotates (VMAS agents do; it matters only for which pairs collide).
        u_multiplier: scale of the action force (agents).
        silent: whether it does not communicate (agents).
        color: RGB colour in ``[0, 1]`` for rendering.

    Examples:
        >>> Body("agent_0", movable=True).radius
        0.05
    """

    name: str
    movable: bool = False
    radius: float = 0.05
    collide: bool = True
    mass: float = 1.0
    max_speed: float | None = None
    rotatable: bool = False
    u_multiplier: float = 1.0
    silent: bool = True
    color: tuple[float, float, float] = (0.25, 0.25, 0.25)


class ParticleWorld(torch.nn.Module):
    """The batched physics of a set of agents and landmarks (see the module docstring).

    Args:
        agents: the agents, in VMAS's order.
        landmarks: the landmarks, in VMAS's order.
        dt: seconds per step.
        substeps: physical substeps per step.
        drag: velocity damping per step.
        collision_force: contact stiffness.
        contact_margin: softness of the contact penalty.
        mass_scale: multiplies every body's mass (``1.0``: the bodies' own masses).
        force_scale: multiplies every agent's action force, on top of its ``u_multiplier``.
        x_semidim: positions are clamped to ``[-x_semidim, x_semidim]`` (``None``: unbounded).
        y_semidim: the same for ``y``.
        dim_c: communication channels per agent.
        device: where the constants live.

    Attributes:
        CONSTANTS: the constants a step may take per row (``step(..., constants=...)``).

    Examples:
        >>> w = ParticleWorld([Body("agent_0", movable=True)], [Body("landmark 0", collide=False)])
        >>> w.n_agents, w.n_entities, w.radius.tolist()
        (1, 2, [0.05000000074505806, 0.05000000074505806])
    """

    CONSTANTS = ("dt", "drag", "collision_force", "contact_margin", "mass_scale", "force_scale")

    def __init__(
        self,
        agents: list[Body],
        landmarks: list[Body],
        *,
        dt: float = 0.1,
        substeps: int = 1,
        drag: float = DRAG,
        collision_force: float = COLLISION_FORCE,
        contact_margin: float = CONTACT_MARGIN,
        mass_scale: float = 1.0,
        force_scale: float = 1.0,
        x_semidim: float | None = None,
        y_semidim: float | None = None,
        dim_c: int = 0,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        bodies = [*agents, *landmarks]
        self.agents, self.landmarks, self.bodies = list(agents), list(landmarks), bodies
        self.n_agents, self.n_entities = len(agents), len(bodies)
        self.dt, self.substeps, self.sub_dt = dt, substeps, dt / substeps
        self.drag, self.collision_force, self.contact_margin = drag, collision_force, contact_margin
        self.mass_scale, self.force_scale = mass_scale, force_scale
        self.x_semidim, self.y_semidim, self.dim_c = x_semidim, y_semidim, dim_c

        def buf(name, values, dtype=torch.float32):
            self.register_buffer(name, torch.tensor(values, dtype=dtype, device=device), persistent=False)

        buf("radius", [b.radius for b in bodies])
        buf("movable", [[float(b.movable)] for b in bodies])
        buf("inv_mass", [[1.0 / b.mass] for b in bodies])
        speeds = [math.inf if b.max_speed is None else b.max_speed for b in bodies]
        buf("max_speed", [[s] for s in speeds])
        self.any_max_speed = any(b.max_speed is not None for b in bodies)
        self.any_movable = any(b.movable for b in bodies)
        buf("u_multiplier", [[a.u_multiplier] for a in agents])
        self.unit_u = all(a.u_multiplier == 1.0 for a in agents)
        # runs of consecutive agents that move or not, ``(start, stop, movable)``: a step keeps
        # the old state of the immovable ones by concatenating runs (a block copy each), where a
        # ``torch.where`` over the agents costs ~8x more eagerly on CPU (its kernel is scalar)
        runs: list[list] = []
        for i, a in enumerate(agents):
            if runs and runs[-1][2] == a.movable:
                runs[-1][1] = i + 1
            else:
                runs.append([i, i + 1, a.movable])
        self.movable_runs = [tuple(r) for r in runs]
        buf("agent_silent", [[float(a.silent)] for a in agents])
        buf("colors", [b.color for b in bodies])
        buf(
            "semidims", [[math.inf if x_semidim is None else x_semidim], [math.inf if y_semidim is None else y_semidim]]
        )
        if any(b.movable for b in landmarks):
            raise ValueError("movable landmarks are not supported (no MPE scenario has one)")
        # contacts act on the agents (landmarks never move). A pair interacts when both collide
        # and one of them moves or rotates (VMAS's rule; agents rotate, landmarks do not). Each
        # unordered pair of agents is computed once (its force pushes the first agent, its
        # opposite the second: the incidence matrix sums them per agent), then each agent against
        # each colliding landmark
        live = [b.movable or b.rotatable for b in bodies]

        def touches(a: Body, b: Body, live_a: bool, live_b: bool) -> float:
            return float(a.collide and b.collide and (live_a or live_b))

        n = self.n_agents
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
        pairs = [(i, j) for i, j in pairs if touches(agents[i], agents[j], live[i], live[j])]
        hit_landmarks = [n + k for k, b in enumerate(landmarks) if b.collide]
        hits = [[touches(a, bodies[h], live[i], live[h]) for h in hit_landmarks] for i, a in enumerate(agents)]
        self.n_pairs, self.n_hits = len(pairs), len(hit_landmarks)
        movers = [i for i, a in enumerate(agents) if a.movable]
        self.has_contacts = any(i in movers or j in movers for i, j in pairs) or any(any(hits[i]) for i in movers)
        buf("pair_first", [i for i, _ in pairs], torch.int64)
        buf("pair_second", [j for _, j in pairs], torch.int64)
        buf("pair_dist", [[agents[i].radius + agents[j].radius] for i, j in pairs])
        incidence = [[float(i == a) - float(j == a) for i, j in pairs] for a in range(n)]
        buf("pair_incidence", incidence if pairs else [[] for _ in range(n)])
        buf("contact_landmarks", hit_landmarks, torch.int64)
        buf("hit_on", hits)
        buf("hit_dist", [[a.radius + bodies[h].radius for h in hit_landmarks] for a in agents])
        self.hit_landmarks_prefix = hit_landmarks == list(range(n, n + len(hit_landmarks)))

    # ------------------------------------------------------------------ layout
    @staticmethod
    def to_columns(x: torch.Tensor) -> torch.Tensor:
        """``[*B, n, 2]`` -> ``[n, 2, prod(B)]`` (contiguous): the batch innermost.

        Pairwise arithmetic on ``[*B, n, m, 2]`` broadcasts over tiny inner dims, which eager CPU
        kernels run ~6x slower than the same arithmetic with the batch innermost (measured on
        8192 rows); the world computes in this layout and converts back once.

        Examples:
            >>> ParticleWorld.to_columns(torch.arange(8.0).reshape(2, 2, 2))[0].tolist()
            [[0.0, 4.0], [1.0, 5.0]]
        """
        n, d = x.shape[-2], x.shape[-1]
        return x.reshape(-1, n, d).permute(1, 2, 0).contiguous()

    @staticmethod
    def from_columns(x: torch.Tensor, batch_shape: torch.Size) -> torch.Tensor:
        """Inverse of :meth:`to_columns`: ``[n, d, prod(B)]`` -> ``[*B, n, d]``.

        Examples:
            >>> x = torch.rand(3, 4, 2)
            >>> torch.equal(ParticleWorld.from_columns(ParticleWorld.to_columns(x), x.shape[:-2]), x)
            True
        """
        return x.permute(2, 0, 1).reshape(*batch_shape, x.shape[0], x.shape[1])

    # ------------------------------------------------------------------ forces
    def contact_forces(self, pos: torch.Tensor) -> torch.Tensor:
        """Sum of the contact forces on each agent, ``[*B, n_agents, 2]``.

        Args:
            pos: float32 ``[*B, n_entities, 2]``.

        Examples:
            >>> w = ParticleWorld([Body("a", movable=True), Body("b", movable=True)], [])
            >>> f = w.contact_forces(torch.tensor([[0.0, 0.0], [0.05, 0.0]]))
            >>> torch.allclose(f[0], -f[1]) and bool(f[0, 0] < 0)
            True
        """
        cols = self.to_columns(pos)
        force = self._contacts(cols[: self.n_agents], self._obstacles(cols))
        return self.from_columns(force, pos.shape[:-2])

    def _obstacles(self, cols: torch.Tensor) -> torch.Tensor:
        """The colliding landmarks' positions ``[n_hit, 2, M]`` (from ``[n_entities, 2, M]``)."""
        n = self.contact_landmarks.numel()
        if self.hit_landmarks_prefix:
            return cols[self.n_agents : self.n_agents + n]
        return cols.index_select(0, self.contact_landmarks)

    def _contacts(
        self, agents: torch.Tensor, obstacles: torch.Tensor, k: Number | None = None, stiffness: Number | None = None
    ) -> torch.Tensor:
        """Contact forces on the agents, ``[n_agents, 2, M]``, from columns ``[n, 2, M]`` (``k``,
        ``stiffness``: the contact margin and force, numbers or ``[M]`` tensors; ``None``: the
        world's)."""
        k = self.contact_margin if k is None else k
        stiffness = self.collision_force if stiffness is None else stiffness
        force = torch.zeros_like(agents)
        if self.n_pairs:  # each pair of agents once: +f on the first, -f on the second
            delta = agents.index_select(0, self.pair_first) - agents.index_select(0, self.pair_second)
            push = delta * self._contact_scale(delta, self.pair_dist, k, stiffness).unsqueeze(1)  # [P, 2, M]
            force = (self.pair_incidence[:, :, None, None] * push.unsqueeze(0)).sum(1)
        if self.n_hits:  # agents against the colliding landmarks
            delta = agents.unsqueeze(1) - obstacles.unsqueeze(0)  # [n_agents, n_hits, 2, M]
            scale = self._contact_scale(delta, self.hit_dist.unsqueeze(-1), k, stiffness) * self.hit_on.unsqueeze(-1)
            force = force + (delta * scale.unsqueeze(2)).sum(1)
        return force

    def _contact_scale(
        self, delta: torch.Tensor, dmin: torch.Tensor, k: Number | torch.Tensor, stiffness: Number | torch.Tensor
    ) -> torch.Tensor:
        """The force per unit of ``delta`` (``[..., 2, M]``) of pairs at rest distance ``dmin``
        (broadcast to ``[..., M]``): ``stiffness * k * softplus((dmin - d) / k) / d`` where
        ``0 < d <= dmin`` (``d >= 1e-6``), else 0."""
        dist = (delta.select(-2, 0).square() + delta.select(-2, 1).square()).sqrt()  # [..., M]
        # k * log(1 + exp(z)), z = (dmin - dist) / k, needed only where z >= 0 (touching pairs):
        # z + log1p(exp(-z)) there, with exp's argument kept in [-30, 0] (the correction is below
        # float32 resolution beyond). Compiled on CPU, 65536 rows x 9 pairs: 41 ms with
        # ``softplus(z)`` over z's full range (|z| up to ~3000, exp under/overflowing), 14 ms so
        # (one run, loaded 2-core machine). ``log(1 + e)`` rather than ``log1p(e)``: for e in
        # (0, 1] the two differ by ~1e-7 at most (the rounding of 1 + e), about one float32 ulp
        # of the sum with z; Inductor's vectorized log1p cost ~1.3x its log (3 x 8192 values)
        z = ((dmin - dist) / k).clamp(min=0.0)
        penetration = (z + torch.log(1.0 + torch.exp(-z.clamp(max=30.0)))) * k
        scale = stiffness * penetration / torch.where(dist > 0, dist, 1e-8)
        return torch.where((dist >= _MIN_DIST) & (dist <= dmin), scale, 0.0)

    # ------------------------------------------------------------------ integration
    def step(
        self,
        pos: torch.Tensor,
        vel: torch.Tensor,
        agent_force: torch.Tensor,
        constants: Mapping[str, Number] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One world step: ``substeps`` contact/integration substeps.

        Args:
            pos: float32 ``[*B, n_entities, 2]``.
            vel: float32 ``[*B, n_entities, 2]``.
            agent_force: the agents' actions, float32 ``[*B, n_agents, 2]``, made forces here
                (times each agent's ``u_multiplier``; ignored for immovable agents).
            constants: values of :attr:`CONSTANTS` for this step (``dt``, ``drag``,
                ``collision_force``, ``contact_margin``, ``mass_scale``, ``force_scale``): numbers, or ``[*B]`` tensors (one value
                per row, see :mod:`gpusim.envs.native.params`); a missing one is the world's.

        Returns:
            The new ``(pos, vel)``; immovable entities (landmarks among them) keep theirs.

        Examples:
            >>> w = ParticleWorld([Body("agent_0", movable=True)], [Body("landmark 0", collide=False)])
            >>> pos, vel = w.step(torch.zeros(1, 2, 2), torch.zeros(1, 2, 2), torch.tensor([[[1.0, 0.0]]]))
            >>> vel[0].tolist(), pos[0, 0].tolist()  # v = 0.1 * F / m, x = 0.1 * v; the landmark stays
            ([[0.10000000149011612, 0.0], [0.0, 0.0]], [0.010000000707805157, 0.0])
        """
        if not self.any_movable:
            return pos, vel
        n = self.n_agents
        batch = pos.shape[:-2]
        # a per-row constant [*B] becomes [M], the columns' innermost dim
        c = {name: getattr(self, name) for name in self.CONSTANTS}
        c.update({k: v.reshape(-1) if isinstance(v, torch.Tensor) else v for k, v in (constants or {}).items()})
        sub_dt = c["dt"] / self.substeps
        cols = self.to_columns(pos)
        p, v = cols[:n], self.to_columns(vel[..., :n, :])
        p0, v0 = p, v
        f = self.to_columns(agent_force)
        if not self.unit_u:
            # in columns: row-major, ``[*B, n, 2] * [n, 1]`` broadcasts over inner dims of 2,
            # which eager CPU kernels run element pair by pair (8192 rows: 216 us)
            f = f * self.u_multiplier.unsqueeze(-1)
        if not _is_one(c["force_scale"]):  # (a Python 1.0 adds no op: today's arithmetic)
            f = f * c["force_scale"]
        if not self.has_contacts:
            # the actions come row-major from the policy; without contact forces (in columns) to
            # read, Inductor vectorized the integration over the agents, one row at a time
            # (simple_adversary at 8192 envs: 38% of the compiled step). Written once in columns,
            # the loop runs over the batch: 6.7 -> 10.4 M env-steps/s (CPU time). With contacts
            # the loop is batch-vectorized already and the extra pass cost simple_spread ~16%
            f = realized(f)
        obstacles = self._obstacles(cols) if self.has_contacts else None
        v = v * (1.0 - c["drag"])
        step_v = self.inv_mass[:n].unsqueeze(-1) * sub_dt
        if not _is_one(c["mass_scale"]):
            step_v = step_v / c["mass_scale"]
        max_speed = self.max_speed[:n].unsqueeze(-1)
        for _ in range(self.substeps):
            if self.has_contacts:
                force = f + self._contacts(p, obstacles, c["contact_margin"], c["collision_force"])
            else:
                force = f
            v = v + force * step_v
            if self.any_max_speed:
                speed = (v[:, 0:1].square() + v[:, 1:2].square()).sqrt()
                v = torch.where(speed > max_speed, v / speed * max_speed, v)
            p = self._clamp(p + v * sub_dt)
        if len(self.movable_runs) > 1:  # (one run: every agent moves, as any_movable holds)
            p, v = self._keep_immovable(p, p0), self._keep_immovable(v, v0)
        if n < self.n_entities:
            p = torch.cat([p, cols[n:]], 0)
            v = torch.cat([v, self.to_columns(vel[..., n:, :])], 0)
        # views of the columns: the returned state keeps the batch innermost in memory
        return self.from_columns(p, batch), self.from_columns(v, batch)

    def _keep_immovable(self, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
        """Agent columns ``[n, d, M]`` taken from ``new`` for movable agents, ``old`` otherwise."""
        return torch.cat([(new if moves else old)[a:b] for a, b, moves in self.movable_runs], 0)

    def _clamp(self, cols: torch.Tensor) -> torch.Tensor:
        if self.x_semidim is None and self.y_semidim is None:
            return cols
        return torch.clamp(cols, -self.semidims, self.semidims)
