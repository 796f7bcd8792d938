"""``VmasWrapper`` and ``VmasEnv``: `VMAS <https://github.com/proroklab/VectorizedMultiAgentSimulator>`_
scenarios as gpusim multi-agent envs.

VMAS is itself a batched torch program (``num_envs`` worlds on one device), so the wrapper only
regroups its per-agent lists of tensors into groups: each group (``"agents"`` by default) is a
nested entry with batch dims ``(num_envs, n_agents_in_group)`` holding ``observation``,
``action``, ``reward`` and ``info/<key>``; ``done``, ``terminated`` and ``truncated`` (set by
``max_steps``) are shared, at the root, with shape ``(num_envs, 1)``.

Grouping (see :mod:`gpusim.envs.libs.marl`): by default all agents share the ``"agents"`` group
when their specs are identical (``MarlGroupMapType.ALL_IN_ONE_GROUP``); otherwise agents are
grouped by name prefix (``"adversary_0"`` -> ``"adversary"``) when each such group is
homogeneous, else one group per agent. ``group_map`` overrides this; agents of one group must
have the same spec shapes.

Host syncs: the step adds none to VMAS's own. VMAS 1.5.2 resets either everything
(``reset``) or one env index (``reset_at(i)``), with no batched masked reset, so a partial reset
reads the ``"_reset"`` mask on the host once (``nonzero``) and loops over the selected rows; a
full reset costs no sync.

Examples:
    >>> env = VmasEnv("balance", num_envs=4, n_agents=3, seed=0)
    >>> env.group_map
    {'agents': ['agent_0', 'agent_1', 'agent_2']}
    >>> td = env.rand_step(env.reset())
    >>> td["next", "agents", "observation"].shape, td["next", "done"].shape
    (torch.Size([4, 3, 16]), torch.Size([4, 1]))
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs._fasttd import new_td
from gpusim.envs.episode import AutoResetMode, ResetMasks
from gpusim.envs.libs._optional import import_optional
from gpusim.envs.libs._wrapper import LibraryWrapper
from gpusim.envs.libs.marl import MarlGroupMapType, check_marl_grouping
from gpusim.specs import Bounded, Categorical, Composite, MultiCategorical, OneHot, TensorSpec, Unbounded

__all__ = ["VmasWrapper", "VmasEnv"]

_UNUSED_KWARGS = "passed but not used by the scenario"


def _import_vmas(what: str) -> Any:
    return import_optional("vmas", "vmas", extra="vmas", what=what)


def _new_td(source: dict, batch_size: Sequence[int], device: torch.device) -> TensorDict:
    return new_td(source, torch.Size(batch_size), device)


class VmasWrapper(LibraryWrapper):
    """Wraps a ``vmas.simulator.environment.Environment``.

    Args:
        env: the VMAS environment (from ``vmas.make_env``).
        categorical_actions: discrete actions as ``Categorical`` indices (``True``) or ``OneHot``.
            Ignored for continuous and multi-discrete action spaces.
        group_map: a ``MarlGroupMapType`` or a dict ``{group: [agent_name, ...]}``; ``None`` picks
            the default grouping described in the module docstring.
        device: must match the VMAS env's device when given (the data lives where VMAS runs).
        batch_size: optional check; must be ``[env.num_envs]``.
        allow_done_after_reset: passed to ``EnvBase``.

    Raises:
        TypeError: if ``env`` is not a VMAS environment or ``group_map`` has the wrong type.
        ValueError: for a group map that misses/duplicates agents or groups agents whose specs
            differ, a ``device`` or ``batch_size`` that does not match the VMAS env.

    Examples:
        >>> import vmas
        >>> env = VmasWrapper(vmas.make_env("simple_spread", num_envs=2, seed=0))
        >>> env.full_action_spec["agents", "action"].shape
        torch.Size([2, 3, 2])
    """

    library = "VMAS"

    def __init__(
        self,
        env: Any = None,
        *,
        categorical_actions: bool = True,
        group_map: MarlGroupMapType | dict | None = None,
        device: torch.device | str | int | None = None,
        batch_size: Any = None,
        allow_done_after_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__} got unexpected keyword arguments {sorted(kwargs)}")
        vmas = _import_vmas(type(self).__name__)
        if not isinstance(env, vmas.simulator.environment.Environment):
            raise TypeError(
                f"{type(self).__name__} expects a vmas Environment (vmas.make_env), got {type(env).__name__}"
            )
        env_device = torch.device(env.device)
        if device is not None and torch.device(device) != env_device:
            raise ValueError(
                f"device={device!r} differs from the VMAS env's device {env_device}; build VMAS on that device"
            )
        B = torch.Size([env.num_envs])
        if batch_size is not None and torch.Size(batch_size if not isinstance(batch_size, int) else [batch_size]) != B:
            raise ValueError(f"batch_size={batch_size!r} does not match the VMAS env's num_envs={env.num_envs}")
        super().__init__(
            device=env_device,
            batch_size=B,
            allow_done_after_reset=allow_done_after_reset,
            auto_reset_mode=AutoResetMode.SPARSE,  # VMAS resets by index: the rows are read on the host anyway
        )
        self._wrap(env)
        self.categorical_actions = categorical_actions
        self.agent_names = [agent.name for agent in env.agents]
        self.n_agents = len(self.agent_names)
        obs, infos = self._scenario_obs_infos()
        agent_specs = [self._agent_specs(i, obs[i], infos[i]) for i in range(self.n_agents)]
        self.group_map = self._resolve_group_map(group_map, agent_specs)
        self._build_specs(agent_specs)

    @property
    def scenario(self) -> Any:
        """The VMAS scenario.

        Examples:
            >>> env = VmasEnv("balance", num_envs=2, n_agents=2, seed=0)
            >>> type(env.scenario).__name__
            'Scenario'
        """
        return self._env.scenario

    # ------------------------------------------------------------------ specs
    def _scenario_obs_infos(self) -> tuple[list, list]:
        obs, infos = self._env.get_from_scenario(
            get_observations=True, get_rewards=False, get_infos=True, get_dones=False, dict_agent_names=False
        )
        return obs, infos

    def _agent_action_spec(self, index: int) -> TensorSpec:
        env = self._env
        space = env.get_agent_action_space(env.agents[index])
        kind = type(space).__name__
        B = self.batch_size
        if kind == "Box":
            low = torch.as_tensor(space.low, dtype=torch.float32, device=self.device)
            high = torch.as_tensor(space.high, dtype=torch.float32, device=self.device)
            return Bounded(low, high, shape=(*B, *low.shape), device=self.device)
        if kind == "Discrete":
            n = int(space.n)
            if self.categorical_actions:
                return Categorical(n, shape=B, device=self.device)
            return OneHot(n, shape=(*B, n), device=self.device, dtype=torch.int64)
        if kind == "MultiDiscrete":
            nvec = [int(n) for n in space.nvec]
            return MultiCategorical(nvec, shape=(*B, len(nvec)), device=self.device)
        raise TypeError(f"unsupported VMAS action space {space!r} for agent {self.agent_names[index]!r}")

    def _leaf_spec(self, value: torch.Tensor) -> TensorSpec:
        shape = tuple(value.shape[1:]) or (1,)
        return Unbounded((*self.batch_size, *shape), device=self.device, dtype=value.dtype)

    def _agent_specs(self, index: int, obs: Any, info: dict) -> dict:
        if isinstance(obs, dict):
            obs_spec = Composite(
                {k: self._leaf_spec(v) for k, v in obs.items()}, shape=self.batch_size, device=self.device
            )
        else:
            obs_spec = self._leaf_spec(obs)
        info_spec = Composite(
            {k: self._leaf_spec(v) for k, v in info.items()}, shape=self.batch_size, device=self.device
        )
        return {"action": self._agent_action_spec(index), "observation": obs_spec, "info": info_spec}

    @staticmethod
    def _signature(specs: dict) -> tuple:
        def sig(spec):
            if isinstance(spec, Composite):
                return tuple(sorted((k, sig(v)) for k, v in spec.items()))
            nvec = getattr(spec, "nvec", ())
            nvec = tuple(nvec.reshape(-1).tolist()) if isinstance(nvec, torch.Tensor) else tuple(nvec)
            return (type(spec).__name__, tuple(spec.shape), spec.dtype, getattr(spec, "n", None), nvec)

        return tuple((name, sig(spec)) for name, spec in sorted(specs.items()))

    def _resolve_group_map(self, group_map: Any, agent_specs: list[dict]) -> dict[str, list[str]]:
        names = self.agent_names
        sigs = {name: self._signature(s) for name, s in zip(names, agent_specs)}
        if group_map is None:
            if len(set(sigs.values())) == 1:
                group_map = MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(names)
            else:
                by_prefix: dict[str, list[str]] = {}
                for name in names:
                    by_prefix.setdefault(name.rsplit("_", 1)[0] if "_" in name else name, []).append(name)
                homogeneous = all(len({sigs[n] for n in members}) == 1 for members in by_prefix.values())
                group_map = by_prefix if homogeneous else MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map(names)
        elif isinstance(group_map, MarlGroupMapType):
            group_map = group_map.get_group_map(names)
        elif isinstance(group_map, dict):
            group_map = {g: list(m) for g, m in group_map.items()}
        else:
            raise TypeError(f"group_map must be a MarlGroupMapType, a dict or None, got {type(group_map).__name__}")
        check_marl_grouping(group_map, names)
        reserved = {"done", "terminated", "truncated", "_reset"}
        for group, members in group_map.items():
            if group in reserved:
                raise ValueError(f"the group name {group!r} is reserved for the root done entries")
            if len({sigs[n] for n in members}) != 1:
                detail = {n: agent_specs[names.index(n)]["observation"].shape for n in members}
                raise ValueError(
                    f"group {group!r} mixes agents whose specs differ (observation shapes {detail}, or action/"
                    "info specs); put them in different groups"
                )
        return group_map

    def _build_specs(self, agent_specs: list[dict]) -> None:
        B = self.batch_size
        device = self.device
        index = {name: i for i, name in enumerate(self.agent_names)}
        plan = []
        obs_spec = Composite(shape=B, device=device)
        act_spec = Composite(shape=B, device=device)
        rew_spec = Composite(shape=B, device=device)
        for group, members in self.group_map.items():
            idx = [index[n] for n in members]
            G = (*B, len(idx))
            specs = [agent_specs[i] for i in idx]
            obs = _stack_specs([s["observation"] for s in specs], G)
            info = _stack_specs([s["info"] for s in specs], G)
            act = _stack_specs([s["action"] for s in specs], G)
            obs_group = Composite(observation=obs, shape=G, device=device)
            if len(info.keys()):
                obs_group["info"] = info
            obs_spec[group] = obs_group
            act_spec[group] = Composite(action=act, shape=G, device=device)
            rew_spec[group] = Composite(reward=Unbounded((*G, 1), device=device), shape=G, device=device)
            one_hot = isinstance(act, OneHot)
            info_keys = list(info.keys())
            info_shapes = {k: info[k].shape for k in info_keys}
            plan.append((group, idx, one_hot, info_keys, info_shapes, torch.Size(G), isinstance(obs, Composite)))
        self.__dict__["_plan"] = plan
        self.full_action_spec = act_spec
        self.observation_spec = obs_spec
        self.full_reward_spec = rew_spec
        flag = Categorical(2, shape=(*B, 1), dtype=torch.bool, device=device)
        self.full_done_spec = Composite(
            done=flag, terminated=flag.clone(), truncated=flag.clone(), shape=B, device=device
        )

    # ------------------------------------------------------------------ data
    def _groups(self, obs: list, infos: list, rewards: list | None) -> dict:
        src = {}
        device = self.device
        for group, idx, _, info_keys, _, G, dict_obs in self._plan:
            if dict_obs:
                o = _new_td({k: _stack([obs[i][k] for i in idx], G) for k in obs[idx[0]]}, G, device)
            else:
                o = _stack([obs[i] for i in idx], G)
            node = {"observation": o}
            if info_keys:
                node["info"] = _new_td({k: _stack([infos[i][k] for i in idx], G) for k in info_keys}, G, device)
            if rewards is not None:
                node["reward"] = _stack([rewards[i] for i in idx], G)
            src[group] = _new_td(node, G, device)
        return src

    def _dones(self, terminated: torch.Tensor, truncated: torch.Tensor | None) -> dict:
        shape = (*self.batch_size, 1)
        terminated = terminated.reshape(shape).bool()
        truncated = torch.zeros_like(terminated) if truncated is None else truncated.reshape(shape).bool()
        return {"terminated": terminated, "truncated": truncated, "done": terminated | truncated}

    def _reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs: Any) -> TensorDictBase:
        env = self._env
        mask = masks.env_rows()
        if mask is None:
            env.reset(return_observations=False)
        else:
            # VMAS has no batched masked reset: one host read of the selected rows (documented sync)
            rows = mask.reshape(-1).nonzero().squeeze(-1).tolist()
            if len(rows) == self.batch_size[0]:
                env.reset(return_observations=False)
            else:
                for row in rows:
                    env.reset_at(row, return_observations=False)
        obs, infos = self._scenario_obs_infos()
        src = self._groups(obs, infos, None)
        false = torch.zeros(*self.batch_size, 1, dtype=torch.bool, device=self.device)
        src.update(terminated=false, truncated=false.clone(), done=false.clone())
        return _new_td(src, self.batch_size, self.device)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        env = self._env
        actions: list = [None] * self.n_agents
        for group, idx, one_hot, *_ in self._plan:
            action = tensordict.get((group, "action"))
            if one_hot:
                action = action.argmax(-1)
            for j, i in enumerate(idx):
                actions[i] = action[:, j]
        out = env.step(actions)
        if env.terminated_truncated:
            obs, rewards, terminated, truncated, infos = out
        else:
            obs, rewards, terminated, infos = out
            truncated = None
        if isinstance(obs, dict):
            obs, rewards, infos = ([d[n] for n in self.agent_names] for d in (obs, rewards, infos))
        src = self._groups(obs, infos, rewards)
        src.update(self._dones(terminated, truncated))
        return _new_td(src, self.batch_size, self.device)

    def _set_seed(self, seed: int | None) -> None:
        self._env.seed(seed)


def _stack(values: list, group_shape: torch.Size) -> torch.Tensor:
    """Stacks per-agent tensors ``(B, *shape)`` into ``(B, n_agents, *shape)`` (``(B, n, 1)`` for
    per-env scalars)."""
    out = torch.stack(values, 1)
    return out.unsqueeze(-1) if out.dim() == len(group_shape) else out


def _stack_specs(specs: list[TensorSpec], shape: tuple) -> TensorSpec:
    """Stacks identical-shape per-agent specs along a new agent dim at ``len(shape) - 1``."""
    first = specs[0]
    d = len(shape) - 1
    if isinstance(first, Composite):
        return Composite(
            {k: _stack_specs([s[k] for s in specs], shape) for k in first.keys()}, shape=shape, device=first.device
        )
    tail = tuple(first.shape[d:])
    full = (*shape, *tail)
    if isinstance(first, Bounded):
        low = torch.stack([s.low for s in specs], d)
        high = torch.stack([s.high for s in specs], d)
        return Bounded(low, high, shape=full, device=first.device, dtype=first.dtype)
    if isinstance(first, Categorical):
        return Categorical(first.n, shape=full, device=first.device, dtype=first.dtype)
    if isinstance(first, OneHot):
        return OneHot(first.n, shape=full, device=first.device, dtype=first.dtype)
    if isinstance(first, MultiCategorical):
        return MultiCategorical(first.nvec, shape=full, device=first.device, dtype=first.dtype)
    return Unbounded(full, device=first.device, dtype=first.dtype)


class VmasEnv(VmasWrapper):
    """Builds a VMAS scenario (``vmas.make_env``) and wraps it.

    Args:
        scenario: a scenario name (``"balance"``, ``"simple_spread"``) or a ``BaseScenario``.
        num_envs: number of vectorized worlds (the env batch size).
        device: where VMAS runs (default CPU).
        continuous_actions: continuous (``Bounded``) or discrete actions.
        max_steps: horizon; reaching it sets ``truncated`` (and ``done``).
        categorical_actions: discrete actions as indices (``True``) or one-hot.
        seed: VMAS seed.
        group_map: see :class:`VmasWrapper`.
        **kwargs: scenario arguments (``n_agents=5``) and ``vmas.make_env`` options
            (``dict_spaces``, ``multidiscrete_actions``, ``clamp_actions``, ``grad_enabled``).

    Raises:
        ValueError: for an unknown scenario or a scenario keyword argument that the scenario does
            not use (naming it), or a non-positive ``num_envs``.
        ImportError: if vmas is not installed (saying ``pip install vmas``).

    Examples:
        >>> env = VmasEnv("simple_spread", num_envs=8, seed=0)
        >>> env.rollout(4).shape
        torch.Size([8, 4])
    """

    def __init__(
        self,
        scenario: Any,
        num_envs: int,
        device: torch.device | str | int | None = None,
        continuous_actions: bool = True,
        max_steps: int | None = None,
        categorical_actions: bool = True,
        seed: int | None = None,
        group_map: MarlGroupMapType | dict | None = None,
        **kwargs: Any,
    ) -> None:
        vmas = _import_vmas("VmasEnv")
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 1):
            raise ValueError(f"max_steps must be a positive int or None, got {max_steps!r}")
        env_kwargs = {k: kwargs.pop(k) for k in ("batch_size", "allow_done_after_reset") if k in kwargs}
        if isinstance(scenario, str):
            try:
                loader = importlib.import_module("vmas.scenarios")  # the package (vmas.scenarios is a list)
                scenario_obj = loader.load(scenario if scenario.endswith(".py") else scenario + ".py").Scenario()
            except (AssertionError, FileNotFoundError, ModuleNotFoundError, AttributeError) as err:
                known = sorted({*vmas.scenarios, *vmas.mpe_scenarios, *vmas.debug_scenarios})
                raise ValueError(f"unknown VMAS scenario {scenario!r}; known scenarios: {known}") from err
        else:
            scenario_obj = scenario
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                env = vmas.make_env(
                    scenario_obj,
                    num_envs=num_envs,
                    device="cpu" if device is None else device,
                    continuous_actions=continuous_actions,
                    max_steps=max_steps,
                    seed=seed,
                    terminated_truncated=True,
                    **kwargs,
                )
            except TypeError as err:
                raise ValueError(f"VmasEnv({scenario!r}): invalid keyword arguments {sorted(kwargs)}: {err}") from err
        for w in caught:
            if _UNUSED_KWARGS in str(w.message):
                raise ValueError(
                    f"VmasEnv({scenario!r}): the scenario does not use the keyword arguments: {w.message}".split(
                        " This will"
                    )[0]
                )
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        self.__dict__["scenario_name"] = scenario if isinstance(scenario, str) else type(scenario).__name__
        super().__init__(env, categorical_actions=categorical_actions, group_map=group_map, **env_kwargs)

    def __repr__(self) -> str:
        return (
            f"VmasEnv(scenario={self.scenario_name!r}, num_envs={self.batch_size[0]}, n_agents={self.n_agents}, "
            f"group_map={self.group_map}, device={self.device})"
        )
