"""``MpeEnv``: the multi-agent plumbing every MPE scenario shares (specs, groups, actions, steps).

A scenario subclass builds a :class:`~gpusim.envs.native.mpe._world.ParticleWorld`, lists its
:class:`Team` s (agents of one kind, in VMAS's agent order) and implements three pure functions
of the state: ``_start(rows)`` (the start state, from the reset draws of ``rows``), ``_observe(state)`` and ``_reward(state)``
(one tensor per team). This class turns them into TorchRL's multi-agent layout exactly as
:class:`~gpusim.envs.libs.vmas.VmasEnv` builds it from VMAS:

* groups: ``"agents"`` when every agent has the same observation and action specs, else one
  group per team, named by the agents' name prefix (``"adversary"``, ``"agent"``);
* under each group (batch dims ``(*B, n_in_group)``): ``"observation"`` float32 ``[..., d]``,
  ``"action"`` (continuous: ``Bounded`` ``[..., 2 (+ dim_c)]`` in ``[-1, 1]`` (``[0, 1]`` for the
  communication part); discrete: ``Categorical(9 * (dim_c or 1))`` ``[...]``, or ``OneHot`` with
  ``categorical_actions=False``) and ``"reward"`` float32 ``[..., 1]``;
* at the root: ``"done"``, ``"terminated"`` (always ``False``: MPE episodes do not end) and
  ``"truncated"`` (``max_steps`` reached), bool ``[*B, 1]``.

The physical state travels under ``"state"``: ``pos``/``vel`` ``[*B, n_entities, 2]``, ``c``
``[*B, n_agents, dim_c]`` when agents communicate, ``steps`` int64 ``[*B, 1]`` and the scenario's
own entries (goals, keys). Start states are drawn from the reset stream of the env's counter-based
generator (``rows`` of :meth:`_reset`, keyed by seed, row and episode).

Discrete actions follow VMAS: the index ``a`` of ``9 * C`` choices (``C = dim_c`` for a speaking
agent, else 1) splits into ``x = a // (3 C)``, ``y = (a // C) % 3`` and the message ``a % C``;
each of ``x, y`` picks ``0`` (stay), ``-u_range`` or ``+u_range``; the message is one-hot.

Examples:
    >>> from gpusim.envs.native.mpe import SimpleSpreadEnv
    >>> env = SimpleSpreadEnv(batch_size=[4], seed=0)
    >>> env.group_map
    {'agents': ['agent_0', 'agent_1', 'agent_2']}
    >>> env.rand_step(env.reset())["next", "agents", "reward"].shape
    torch.Size([4, 3, 1])
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from tensordict import TensorDictBase

from gpusim.envs._fasttd import new_td
from gpusim.envs.native._base import NativeEnv
from gpusim.envs.native._checks import check_positive, check_probability
from gpusim.envs.native.mpe._world import ParticleWorld
from gpusim.envs.native.rng import ResetRows
from gpusim.kernels._inductor import realized
from gpusim.specs import Bounded, Categorical, Composite, OneHot, Unbounded

__all__ = ["MpeEnv", "Team", "check_bool", "check_count", "off_diagonal", "others", "others_index"]

_RESERVED = {"done", "terminated", "truncated", "_reset", "state", "params"}


def check_bool(name: str, value: object) -> bool:
    """``value`` if it is a bool, else ``TypeError`` naming ``name``.

    Examples:
        >>> check_bool("obs_agents", True)
        True
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return value


def check_count(name: str, value: object, minimum: int) -> int:
    """``value`` if it is an int ``>= minimum``, else ``ValueError`` naming ``name``.

    Examples:
        >>> check_count("n_agents", 0, 1)
        Traceback (most recent call last):
        ...
        ValueError: n_agents must be an int >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def others_index(n: int, device: torch.device | str | None = None) -> torch.Tensor:
    """``[n, n - 1]`` int64: row ``i`` lists ``0 .. n-1`` without ``i`` (the other agents, in order).

    Examples:
        >>> others_index(3).tolist()
        [[1, 2], [0, 2], [0, 1]]
    """
    rows = [[j for j in range(n) if j != i] for i in range(n)]
    return torch.tensor(rows, dtype=torch.int64, device=device).reshape(n, max(n - 1, 0))


def off_diagonal(x: torch.Tensor) -> torch.Tensor:
    """``[n, n, *rest]`` -> ``[n, n - 1, *rest]``: row ``i`` keeps ``x[i, j]`` for ``j != i``, in
    order (``x[i, others_index(n)[i]]``).

    Two shifted slices and a constant mask, no gather and no reshape: entry ``(i, k)`` is
    ``x[i, k]`` before the diagonal (``k < i``) and ``x[i, k + 1]`` after it. Compiled, it is one
    pointwise select that fuses into its consumer, so a batch dim in ``rest`` stays one vectorized
    loop (a gather, or a reshape of the slices, materializes ``x`` first).

    Examples:
        >>> x = torch.arange(9).reshape(3, 3)
        >>> off_diagonal(x).tolist(), torch.equal(off_diagonal(x), x[torch.arange(3)[:, None], others_index(3)])
        ([[1, 2], [3, 5], [6, 7]], True)
        >>> off_diagonal(torch.zeros(1, 1, 2, 5)).shape
        torch.Size([1, 0, 2, 5])
    """
    n, rest = x.shape[0], x.shape[2:]
    if x.dim() < 2 or x.shape[1] != n:
        raise ValueError(f"off_diagonal needs a square [n, n, ...] tensor, got shape {list(x.shape)}")
    k = torch.arange(max(n - 1, 0), device=x.device)
    before = (k < torch.arange(n, device=x.device).unsqueeze(1)).reshape(n, n - 1, *(1,) * len(rest))
    return torch.where(before, x[:, : n - 1], x[:, 1:])


def others(x: torch.Tensor) -> torch.Tensor:
    """``[n, *rest]`` -> ``[n, n - 1, *rest]``: row ``i`` holds the other entries of ``x``, in
    order (``x[others_index(n)]``, without a gather: :func:`off_diagonal`).

    Examples:
        >>> others(torch.tensor([10, 11, 12])).tolist()
        [[11, 12], [10, 12], [10, 11]]
    """
    return off_diagonal(x.unsqueeze(0).expand(x.shape[0], *x.shape))


@dataclasses.dataclass(frozen=True)
class Team:
    """Agents of one kind: consecutive in the world's agent order, same observation and actions.

    Args:
        prefix: the name prefix (``"agent"`` for ``agent_0``, ``agent_1``...), the group name when
            teams are grouped apart.
        size: how many agents.
        obs_dim: observation length of each.
        silent: whether they do not communicate (no message part in their actions).
        names: explicit agent names (default ``f"{prefix}_{i}"``).

    Examples:
        >>> Team("adversary", 2, 8).agent_names
        ['adversary_0', 'adversary_1']
    """

    prefix: str
    size: int
    obs_dim: int
    silent: bool = True
    names: tuple[str, ...] | None = None

    @property
    def agent_names(self) -> list[str]:
        """The agents' names."""
        return list(self.names) if self.names is not None else [f"{self.prefix}_{i}" for i in range(self.size)]


def _check_max_steps(value: object) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"max_steps must be a positive int or None, got {value!r}")
    return value  # type: ignore[return-value]


class MpeEnv(NativeEnv):
    """Base of the MPE scenarios (see the module docstring). Not built directly.

    Args:
        batch_size: the env batch dims.
        device: where the data lives.
        seed: seed of the env's random numbers.

    Keyword Args:
        world: the scenario's particle world.
        teams: the scenario's teams, in agent order (their sizes add to ``world.n_agents``).
        continuous_actions: continuous (``Bounded``) or discrete actions.
        categorical_actions: discrete actions as indices (``True``) or one-hot vectors.
        max_steps: horizon: ``truncated`` is set once a row has taken that many steps (``None``:
            never).
        auto_reset_mode: see :class:`~gpusim.envs.common.EnvBase`.
        dt: seconds per step (``None``: the world's, VMAS's ``0.1``).
        drag: velocity damping per step, in ``[0, 1]`` (``None``: ``0.25``).
        collision_force: contact stiffness (``None``: ``100``).
        contact_margin: softness of the contact penalty (``None``: ``1e-3``).
        mass_scale: multiplies every body's mass (``None``: ``1.0``, VMAS's masses).
        force_scale: multiplies every agent's action force, on top of its ``u_multiplier``
            (``None``: ``1.0``).
        randomize: ``{param: distribution}`` re-drawn for the rows that reset (see
            :mod:`gpusim.envs.native.params`).
        expose_params: put the per-env parameters in the observation spec too.

    The physical constants in ``params`` (``dt``, ``drag``, ``collision_force``,
    ``contact_margin``, ``mass_scale``, ``force_scale``) may be numbers or ``[*B]`` tensors (one value per env); every scenario
    takes them as keyword arguments. Body sizes and masses stay per-entity constants (the
    scenarios' observations and rewards read them).

    Examples:
        >>> from gpusim.envs.native.mpe import SimpleTagEnv
        >>> env = SimpleTagEnv(batch_size=[2], seed=0, continuous_actions=False)
        >>> isinstance(env, MpeEnv), [t.prefix for t in env.teams], env.full_action_spec["agent", "action"].space.n
        (True, ['adversary', 'agent'], 9)
    """

    params = ParticleWorld.CONSTANTS

    def __init__(
        self,
        batch_size: Any = (),
        device: torch.device | str | None = None,
        seed: int | None = None,
        *,
        world: ParticleWorld,
        teams: list[Team],
        continuous_actions: bool = True,
        categorical_actions: bool = True,
        max_steps: int | None = None,
        auto_reset_mode: str | None = None,
        dt: float | torch.Tensor | None = None,
        drag: float | torch.Tensor | None = None,
        collision_force: float | torch.Tensor | None = None,
        contact_margin: float | torch.Tensor | None = None,
        mass_scale: float | torch.Tensor | None = None,
        force_scale: float | torch.Tensor | None = None,
        randomize: dict[str, Any] | None = None,
        expose_params: bool = False,
    ) -> None:
        self.dt = check_positive("dt", world.dt if dt is None else dt)
        self.drag = check_probability("drag", world.drag if drag is None else drag)
        self.collision_force = check_positive(
            "collision_force", world.collision_force if collision_force is None else collision_force
        )
        self.contact_margin = check_positive(
            "contact_margin", world.contact_margin if contact_margin is None else contact_margin
        )
        self.mass_scale = check_positive("mass_scale", world.mass_scale if mass_scale is None else mass_scale)
        self.force_scale = check_positive("force_scale", world.force_scale if force_scale is None else force_scale)
        for name, flag in (("continuous_actions", continuous_actions), ("categorical_actions", categorical_actions)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool, got {flag!r}")
        if sum(t.size for t in teams) != world.n_agents:
            raise ValueError(f"the teams hold {sum(t.size for t in teams)} agents, the world {world.n_agents}")
        self.continuous_actions = continuous_actions
        self.categorical_actions = categorical_actions
        self._max_steps = _check_max_steps(max_steps)  # read through the ``max_steps`` property
        super().__init__(
            batch_size,
            device,
            seed,
            auto_reset_mode=auto_reset_mode,
            num_noise=2 * world.n_entities,
            randomize=randomize,
            expose_params=expose_params,
        )
        self.world = world.to(self.device)
        self.teams = list(teams)
        self.register_buffer("_axis_u", torch.tensor([0.0, -1.0, 1.0], device=self.device), persistent=False)
        self._build_groups()
        self._build_specs()

    # ------------------------------------------------------------------ layout
    @property
    def max_steps(self) -> int | None:
        """The horizon (``None``: none; then no row ever ends, :attr:`ends_episodes` is
        ``False``). Settable: a new horizon re-plans the env's step pipeline.

        Examples:
            >>> from gpusim.envs.native.mpe import SimpleSpreadEnv
            >>> env = SimpleSpreadEnv(batch_size=[2])
            >>> env.max_steps, env.ends_episodes
            (None, False)
            >>> env.max_steps = 25
            >>> env.ends_episodes
            True
        """
        return self._max_steps

    @max_steps.setter
    def max_steps(self, value: int | None) -> None:
        self._max_steps = _check_max_steps(value)
        self._cache.pop("step_pipeline", None)  # another reset plan

    @property
    def ends_episodes(self) -> bool:
        """Whether a step can end an episode: only through ``max_steps`` (no MPE scenario
        terminates).

        Examples:
            >>> from gpusim.envs.native.mpe import SimpleSpreadEnv
            >>> SimpleSpreadEnv(batch_size=[2], max_steps=25).ends_episodes
            True
        """
        return self.max_steps is not None

    def _action_signature(self, team: Team) -> tuple:
        comm = self.world.dim_c if not team.silent else 0
        if self.continuous_actions:
            return ("Bounded", 2 + comm)
        return ("OneHot" if not self.categorical_actions else "Categorical", 9 * (comm or 1))

    def _build_groups(self) -> None:
        sigs = {(t.obs_dim, self._action_signature(t)) for t in self.teams}
        if len(sigs) == 1:
            plan = [("agents", self.teams)]
        else:
            prefixes = [t.prefix for t in self.teams]
            if len(set(prefixes)) != len(prefixes):
                raise ValueError(f"teams with different specs share a prefix: {prefixes}")
            plan = [(t.prefix, [t]) for t in self.teams]
        for group, _ in plan:
            if group in _RESERVED:
                raise ValueError(f"the group name {group!r} is reserved")
        self._group_plan = plan
        self.group_map = {g: [n for t in ts for n in t.agent_names] for g, ts in plan}
        self.agent_names = [n for t in self.teams for n in t.agent_names]
        self.n_agents = len(self.agent_names)

    def _build_specs(self) -> None:
        B, dev, world = self.batch_size, self.device, self.world
        obs = Composite(shape=B, device=dev)
        act = Composite(shape=B, device=dev)
        rew = Composite(shape=B, device=dev)
        for group, teams in self._group_plan:
            G = (*B, sum(t.size for t in teams))
            team = teams[0]
            obs[group] = Composite(
                observation=Unbounded((*G, team.obs_dim), dtype=torch.float32, device=dev), shape=G, device=dev
            )
            kind, n = self._action_signature(team)
            if kind == "Bounded":
                low = torch.tensor([-1.0, -1.0] + [0.0] * (n - 2), device=dev).expand(*G, n)
                high = torch.ones(n, device=dev).expand(*G, n)
                spec = Bounded(low.clone(), high.clone(), shape=(*G, n), dtype=torch.float32, device=dev)
            elif kind == "Categorical":
                spec = Categorical(n, shape=G, device=dev)
            else:
                spec = OneHot(n, shape=(*G, n), device=dev, dtype=torch.int64)
            act[group] = Composite(action=spec, shape=G, device=dev)
            rew[group] = Composite(reward=Unbounded((*G, 1), dtype=torch.float32, device=dev), shape=G, device=dev)
        self.observation_spec = obs
        self.full_action_spec = act
        self.full_reward_spec = rew
        flag = Categorical(2, shape=(*B, 1), dtype=torch.bool, device=dev)
        self.full_done_spec = Composite(done=flag, terminated=flag.clone(), truncated=flag.clone(), shape=B, device=dev)
        f32 = torch.float32
        state = {
            "pos": Unbounded((*B, world.n_entities, 2), dtype=f32, device=dev),
            "vel": Unbounded((*B, world.n_entities, 2), dtype=f32, device=dev),
            "steps": Unbounded((*B, 1), dtype=torch.int64, device=dev),
        }
        if world.dim_c:
            state["c"] = Unbounded((*B, world.n_agents, world.dim_c), dtype=f32, device=dev)
        for key, (tail, dtype) in self._extra_state().items():
            state[key] = Unbounded((*B, *tail), dtype=dtype, device=dev)
        self.state_spec = Composite(state=Composite(state, shape=B, device=dev), shape=B, device=dev)

    # ------------------------------------------------------------------ scenario hooks
    def _extra_state(self) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        """Scenario state entries beyond pos/vel/c/steps: ``{name: (shape after *B, dtype)}``."""
        return {}

    def _start(self, rows: ResetRows) -> dict[str, torch.Tensor]:
        """The start state (``pos`` and the extra entries), drawn from ``rows``."""
        raise NotImplementedError

    def _observe(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        """One float32 ``[*B, team.size, team.obs_dim]`` tensor per team."""
        raise NotImplementedError

    def _reward(self, state: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        """One float32 ``[*B, team.size]`` tensor per team."""
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers for scenarios
    def _uniform_positions(
        self, rows: ResetRows, low: torch.Tensor | float, high: torch.Tensor | float
    ) -> torch.Tensor:
        """``pos`` ``[*B, n_entities, 2]`` uniform in ``[low, high)`` (``low``/``high``: numbers or
        ``[n_entities, 1]`` tensors), one reset draw."""
        n = self.world.n_entities
        u = rows.uniform(0.0, 1.0, 2 * n)
        pos = low + (high - low) * u.reshape(*u.shape[:-1], n, 2)
        # the batch innermost in memory, as steps keep it; compiled, written once to a buffer
        # (Inductor otherwise inlines the hash into every use: the start observation reads each
        # position ~7 times; MPE simple_spread at 8192 envs, compiled rollout: the reset's
        # observation loop took ~19% of the step)
        return self._rows_of(realized(self._cols(pos)))

    # columns: ``[n, d, M]`` with the batch innermost (see ParticleWorld.to_columns); scenarios
    # compute their observations and rewards in this layout and convert back once
    def _cols(self, x: torch.Tensor) -> torch.Tensor:
        """``[*B, n, d]`` -> columns ``[n, d, M]``."""
        return self.world.to_columns(x)

    def _rows_of(self, cols: torch.Tensor) -> torch.Tensor:
        """Columns ``[n, d, M]`` -> ``[*B, n, d]``."""
        return self.world.from_columns(cols, self.batch_size)

    def _agents_of(self, x: torch.Tensor) -> torch.Tensor:
        """Per-agent values ``[k, M]`` -> ``[*B, k]``."""
        return x.transpose(0, 1).reshape(*self.batch_size, x.shape[0])

    @staticmethod
    def _lookup(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """``table[index]``: rows of a ``[K, d]`` table (e.g. colours) picked per entry of an
        int64 ``index``, shaped ``[*index.shape, d]`` with the picks innermost in memory (the
        columns layout of the world, which the observations are built in). Through
        ``index_select`` on the transposed table: eager CPU, 8192 picks from 3 rows of 3, 11 us,
        against 17 us picking rows and 50 us for advanced indexing (same values)."""
        return table.t().index_select(1, index.reshape(-1)).view(table.shape[1], *index.shape).movedim(0, -1)

    @staticmethod
    def _pick(cols: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """Per-row picks: ``cols[index[row, j], :, row]`` as columns ``[j, d, M]`` (``index``:
        int64 ``[*B, j]``)."""
        j = index.shape[-1]
        idx = index.reshape(-1, j).transpose(0, 1)  # [j, M]
        return cols.gather(0, idx.unsqueeze(1).expand(j, cols.shape[1], idx.shape[-1]))

    @staticmethod
    def _norm(delta: torch.Tensor, dim: int) -> torch.Tensor:
        """Euclidean norm over the size-2 axis ``dim`` (two squares and a root: cheaper than a
        reduction kernel over a 2-long axis)."""
        x, y = delta.unbind(dim)
        return (x.square() + y.square()).sqrt()

    def _teams_split(self, x: torch.Tensor, dim: int = -2) -> list[torch.Tensor]:
        """Splits an agent-indexed tensor (agents along ``dim``) by team."""
        return list(torch.split(x, [t.size for t in self.teams], dim=dim))

    # ------------------------------------------------------------------ env API
    def _decode(self, action: torch.Tensor, team: Team) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(u [*B, g, 2], message [*B, g, dim_c] or None)`` from a group's action."""
        comm = self.world.dim_c if not team.silent else 0
        if self.continuous_actions:
            return action[..., :2], (action[..., 2:] if comm else None)
        if not self.categorical_actions:
            action = action.argmax(-1)
        c = comm or 1
        x = torch.div(action, 3 * c, rounding_mode="floor")
        y = torch.remainder(torch.div(action, c, rounding_mode="floor"), 3)
        u = torch.stack([self._axis_u[x], self._axis_u[y]], -1)
        if not comm:
            return u, None
        message = torch.nn.functional.one_hot(torch.remainder(action, c), comm).to(torch.float32)
        return u, message

    def _pack(
        self,
        state: dict[str, torch.Tensor],
        rewards: list[torch.Tensor] | None,
        truncated: torch.Tensor,
        echo: dict[str, Any],
    ) -> TensorDictBase:
        B, dev = self.batch_size, self.device
        obs = self._observe(state)
        out: dict[str, Any] = {}
        i = 0
        for group, teams in self._group_plan:
            k = len(teams)
            G = torch.Size((*B, sum(t.size for t in teams)))
            node = {"observation": obs[i] if k == 1 else torch.cat(obs[i : i + k], -2)}
            if rewards is not None:
                r = rewards[i] if k == 1 else torch.cat(rewards[i : i + k], -1)
                node["reward"] = r.unsqueeze(-1)
            out[group] = new_td(node, G, dev)
            i += k
        out["state"] = new_td(dict(state), B, dev)
        terminated = torch.zeros((*B, 1), dtype=torch.bool, device=dev)
        out.update(done=truncated.clone(), terminated=terminated, truncated=truncated, **echo)
        return new_td(out, B, dev)

    def _reset(self, tensordict: TensorDictBase | None, rows: ResetRows) -> TensorDictBase:
        B, dev, world = self.batch_size, self.device, self.world
        state = self._start(rows)
        state.setdefault("vel", self._rows_of(torch.zeros((world.n_entities, 2, B.numel()), device=dev)))
        if world.dim_c:
            state.setdefault("c", torch.zeros((*B, world.n_agents, world.dim_c), device=dev))
        state["steps"] = torch.zeros((*B, 1), dtype=torch.int64, device=dev)
        _, echo = self.physics(tensordict, rows)
        return self._pack(state, None, torch.zeros((*B, 1), dtype=torch.bool, device=dev), echo)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        world = self.world
        old = tensordict["state"]
        state = {key: old[key] for key in self.state_spec["state"].keys()}
        forces, messages = [], []
        for group, teams in self._group_plan:
            u, message = self._decode(tensordict[group, "action"], teams[0])
            forces.append(u)
            messages.append(message)
        # several groups: joined in columns (a block per group; the world reads columns), where
        # a row-major cat of [*B, g, 2] parts copies 8 bytes per call (8192 rows: 25 against 9 us)
        u = forces[0] if len(forces) == 1 else self._rows_of(torch.cat([self._cols(f) for f in forces], 0))
        constants, echo = self.physics(tensordict)
        state["pos"], state["vel"] = world.step(state["pos"], state["vel"], u, constants)
        if world.dim_c:
            old_c = self._group_split(state["c"])
            state["c"] = torch.cat([m if m is not None else c for m, c in zip(messages, old_c)], -2)
        steps = state["steps"] + 1
        state["steps"] = steps
        if self.max_steps is None:
            truncated = torch.zeros_like(steps, dtype=torch.bool)
        else:
            truncated = steps >= self.max_steps
        return self._pack(state, self._reward(state), truncated, echo)

    def _group_split(self, x: torch.Tensor) -> list[torch.Tensor]:
        sizes = [sum(t.size for t in teams) for _, teams in self._group_plan]
        return list(torch.split(x, sizes, dim=-2))
