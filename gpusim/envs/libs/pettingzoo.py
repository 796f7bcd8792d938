"""``PettingZooWrapper`` and ``PettingZooEnv``: `PettingZoo <https://pettingzoo.farama.org>`_
multi-agent envs (parallel and AEC APIs) as gpusim envs.

Layout (TorchRL's documented one): the env has ``batch_size=[]``; agents are stacked into groups
(a nested entry per group with batch dims ``(n_agents_in_group,)``) holding ``observation``,
``action``, ``reward`` (``(n, 1)``), ``done``/``terminated``/``truncated`` (``(n, 1)``), the
numeric ``info/<key>`` entries, ``action_mask`` when the agents' observations or infos carry one,
and ``mask`` with ``use_mask=True``. The root ``done``/``terminated``/``truncated`` (shape ``(1,)``)
aggregate the groups' flags with ``any`` (default for parallel envs: the episode ends as soon as one
agent is done) or ``all`` (default for AEC envs: the game ends when every agent is done);
``done_on_any`` picks one. A root ``"_reset"`` resets the whole env (PettingZoo resets all agents
at once), so nested ``"_reset"`` entries that select only some agents are rejected.

Default grouping: AEC envs put every agent in its own group; parallel envs group agents named
``<name>_<int>`` under ``<name>`` (others get their own group). ``group_map`` overrides it with a
:class:`~gpusim.envs.libs.marl.MarlGroupMapType` or a dict. Agents of a group must share their
observation and action spaces.

Parallel API: every live agent acts on every step; agents that left the episode (only allowed with
``use_mask=True``) get zero observations and rewards, done flags set and ``mask`` False. AEC API
(``use_mask=True`` is required): each step applies the action of ``env.agent_selection`` (its
group's entry at its index), ``mask`` marks that agent; the other agents' actions are ignored.
With discrete actions, the action spec's mask follows ``action_mask`` after every reset and step,
so ``env.rand_action()`` draws legal moves.

Specs are converted once from the gymnasium spaces (:mod:`gpusim.envs.libs.gym_specs`); the info
entries are discovered by one reset at construction (PettingZoo declares no info spaces). A step
stacks each group's per-agent numpy values once per leaf; with a non-CPU ``device`` the output is
moved with one packed transfer (:mod:`gpusim.envs.libs._edge`).

Examples:
    >>> env = PettingZooEnv("tictactoe_v3", parallel=False, use_mask=True, seed=0)
    >>> env.group_map
    {'player_1': ['player_1'], 'player_2': ['player_2']}
    >>> td = env.rand_step(env.reset())
    >>> td["next", "player_1", "observation", "observation"].shape, td["next", "done"].shape
    (torch.Size([1, 3, 3, 2]), torch.Size([1]))
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from gpusim.envs._fasttd import new_td
from gpusim.envs.episode import AutoResetMode, ResetMasks
from gpusim.envs.libs._optional import import_optional
from gpusim.envs.libs._wrapper import LibraryWrapper
from gpusim.envs.libs.gym_specs import GymLeaf, space_to_spec
from gpusim.envs.libs.marl import MarlGroupMapType, check_marl_grouping
from gpusim.specs import Categorical, Composite, MultiOneHot, OneHot, Unbounded

__all__ = ["PettingZooWrapper", "PettingZooEnv"]

_FLAGS = ("done", "terminated", "truncated")
_FAMILIES = ("classic", "butterfly", "sisl", "atari", "mpe")


def _import_pettingzoo(what: str) -> Any:
    return import_optional("pettingzoo", "pettingzoo", extra="pettingzoo", what=what)


def default_group_map(agent_names: list[str], parallel: bool) -> dict[str, list[str]]:
    """PettingZoo's default grouping: one group per agent (AEC); ``<name>_<int>`` agents grouped
    under ``<name>`` and the others alone (parallel).

    Examples:
        >>> default_group_map(["agent_0", "agent_1", "adversary_0", "boss"], parallel=True)
        {'agent': ['agent_0', 'agent_1'], 'adversary': ['adversary_0'], 'boss': ['boss']}
    """
    if not parallel:
        return MarlGroupMapType.ONE_GROUP_PER_AGENT.get_group_map(agent_names)
    groups: dict[str, list[str]] = {}
    for name in agent_names:
        head, _, tail = name.rpartition("_")
        group = head if head and tail.isdigit() else name
        groups.setdefault(group, []).append(name)
    return groups


def _at(data: Any, path: tuple) -> Any:
    for p in path:
        data = data[p]
    return data


def _index(data: Any, i: int) -> Any:
    """Agent ``i``'s part of a stacked action (an array, or dicts/tuples of arrays)."""
    if isinstance(data, dict):
        return {k: _index(v, i) for k, v in data.items()}
    if isinstance(data, tuple):
        return tuple(_index(v, i) for v in data)
    return data[i]


class _Group:
    """The plan of one group: its agents, leaf converters and zero fillers (built once)."""

    def __init__(
        self,
        name: str,
        agents: list[str],
        obs_leaves: list[GymLeaf],
        act_leaves: list[GymLeaf],
        act_space: Any,
        mask_in: str | None,
        n_actions: int | None,
        info_keys: list[str],
    ) -> None:
        self.name = name
        self.agents = agents
        self.n = len(agents)
        self.obs_leaves = obs_leaves
        self.act_leaves = act_leaves
        self.act_space = act_space
        self.mask_in = mask_in  # "observation" or "info": where the agents' action_mask lives
        self.n_actions = n_actions
        self.info_keys = info_keys
        # one zero value per observation leaf (an agent absent from the step's dicts)
        self.obs_zero = [np.zeros(leaf.spec.shape[1:], dtype=_np_dtype(leaf.spec.dtype)) for leaf in obs_leaves]


def _np_dtype(dtype: torch.dtype) -> np.dtype:
    return torch.zeros((), dtype=dtype).numpy().dtype


class PettingZooWrapper(LibraryWrapper):
    """Wraps a PettingZoo env (``pettingzoo.ParallelEnv`` or ``pettingzoo.AECEnv``).

    Args:
        env: the PettingZoo env.
        return_state: add the global ``state`` (``env.state()``) at the root.
        group_map: a ``MarlGroupMapType`` or ``{group: [agent, ...]}``; ``None``: the default
            grouping (module docstring).
        use_mask: output ``mask`` per group (required for AEC envs, and for parallel envs whose
            agents may leave the episode).
        categorical_actions: discrete actions as ``Categorical`` indices (else one-hot).
        seed: seed of the first reset.
        done_on_any: aggregate the groups' flags into the root ones with ``any`` (``True``) or
            ``all`` (``False``); ``None``: ``any`` for parallel envs, ``all`` for AEC envs.
        device: where the data lives (moved there once per step).

    Raises:
        TypeError: ``env`` is not a PettingZoo env, or an unknown keyword argument.
        ValueError: an AEC env without ``use_mask=True``; a group whose agents have different
            spaces; a reserved group name.

    Examples:
        >>> from pettingzoo.classic import rps_v2
        >>> env = PettingZooWrapper(rps_v2.parallel_env(), seed=0)
        >>> env.group_map
        {'player': ['player_0', 'player_1']}
        >>> env.rollout(3, break_when_any_done=False)["next", "player", "reward"].shape
        torch.Size([3, 2, 1])
    """

    library = "PettingZoo"

    def __init__(
        self,
        env: Any = None,
        return_state: bool = False,
        group_map: MarlGroupMapType | dict | None = None,
        use_mask: bool = False,
        categorical_actions: bool = True,
        seed: int | None = None,
        done_on_any: bool | None = None,
        *,
        device: torch.device | str | int | None = None,
        **kwargs: Any,
    ) -> None:
        self._no_kwargs(kwargs, "__init__")
        pz = _import_pettingzoo(type(self).__name__)
        if not isinstance(env, (pz.utils.env.ParallelEnv, pz.utils.env.AECEnv)):
            raise TypeError(
                f"{type(self).__name__} expects a pettingzoo ParallelEnv or AECEnv, got {type(env).__name__}"
            )
        parallel = isinstance(env, pz.utils.env.ParallelEnv)
        if not parallel and not use_mask:
            raise ValueError("AEC envs (one agent acts per step) need use_mask=True, got use_mask=False")
        super().__init__(
            device=device, batch_size=[], allow_done_after_reset=True, auto_reset_mode=AutoResetMode.SPARSE
        )
        self._wrap(env)
        self.parallel = parallel
        self.return_state = return_state
        self.use_mask = use_mask
        self.categorical_actions = categorical_actions
        self.done_on_any = parallel if done_on_any is None else bool(done_on_any)
        self.seed = seed
        self.possible_agents = list(env.possible_agents)
        if group_map is None:
            group_map = default_group_map(self.possible_agents, parallel)
        elif isinstance(group_map, MarlGroupMapType):
            group_map = group_map.get_group_map(self.possible_agents)
        elif isinstance(group_map, dict):
            group_map = {g: list(m) for g, m in group_map.items()}
        else:
            raise TypeError(f"group_map must be a MarlGroupMapType, a dict or None, got {type(group_map).__name__}")
        check_marl_grouping(group_map, self.possible_agents)
        for group in group_map:
            if group in (*_FLAGS, "_reset", "state"):
                raise ValueError(f"the group name {group!r} is reserved for a root entry; rename the group")
        self.group_map = group_map
        obs, info = self._library_reset(seed)
        self._build_specs(info)
        self.__dict__["_first"] = (obs, info)  # the construction reset serves the first reset()

    @property
    def lib(self) -> Any:
        """The pettingzoo module.

        Examples:
            >>> PettingZooEnv("rps_v2", parallel=True, seed=0).lib.__name__
            'pettingzoo'
        """
        return _import_pettingzoo("lib")

    # ------------------------------------------------------------------ specs
    def _build_specs(self, info: dict) -> None:
        env = self._env
        device = self.device
        obs_spec = Composite(shape=(), device=device)
        act_spec = Composite(shape=(), device=device)
        rew_spec = Composite(shape=(), device=device)
        flag = Categorical(2, shape=(1,), dtype=torch.bool, device=device)
        done_spec = Composite({k: flag.clone() for k in _FLAGS}, shape=(), device=device)
        groups = []
        for group, agents in self.group_map.items():
            n = len(agents)
            G = (n,)
            obs_space = env.observation_space(agents[0])
            act_space = env.action_space(agents[0])
            for agent in agents[1:]:
                if env.observation_space(agent) != obs_space or env.action_space(agent) != act_space:
                    raise ValueError(
                        f"group {group!r} mixes agents with different spaces ({agents[0]!r} and {agent!r}); "
                        "put them in different groups (group_map)"
                    )
            a_spec, act_leaves = space_to_spec(
                act_space,
                batch_size=G,
                device=device,
                key=(group, "action"),
                categorical_action_encoding=self.categorical_actions,
            )
            o_spec, obs_leaves = space_to_spec(
                obs_space, batch_size=G, device=device, key=(group, "observation"), copy=True
            )
            mask_in = None
            n_actions = None
            if isinstance(o_spec, Composite) and "action_mask" in o_spec.keys():
                mask_in = "observation"
                del o_spec["action_mask"]
                obs_leaves = [leaf for leaf in obs_leaves if leaf.key != (group, "observation", "action_mask")]
            agent_info = info.get(agents[0], {}) or {}
            if mask_in is None and "action_mask" in agent_info:
                mask_in = "info"
            node = Composite(observation=o_spec, shape=G, device=device)
            if mask_in is not None:
                n_actions = a_spec.shape[-1] if not isinstance(a_spec, Categorical) else a_spec.n
                if isinstance(a_spec, MultiOneHot) or not isinstance(a_spec, (Categorical, OneHot)):
                    n_actions = a_spec.shape[-1]
                node["action_mask"] = Categorical(2, shape=(n, n_actions), dtype=torch.bool, device=device)
            info_keys = []
            for key, value in agent_info.items():
                if key == "action_mask":
                    continue
                arr = np.asarray(value)
                if arr.dtype.kind in "biuf":
                    info_keys.append(key)
            if info_keys:
                node["info"] = Composite(
                    {k: Unbounded((n, *np.asarray(agent_info[k]).shape), device=device) for k in info_keys},
                    shape=G,
                    device=device,
                )
            if self.use_mask:
                node["mask"] = Categorical(2, shape=G, dtype=torch.bool, device=device)
            obs_spec[group] = node
            act_spec[group] = Composite(action=a_spec, shape=G, device=device)
            rew_spec[group] = Composite(reward=Unbounded((n, 1), device=device), shape=G, device=device)
            done_spec[group] = Composite(
                {k: Categorical(2, shape=(n, 1), dtype=torch.bool, device=device) for k in _FLAGS},
                shape=G,
                device=device,
            )
            groups.append(_Group(group, agents, obs_leaves, act_leaves, act_space, mask_in, n_actions, info_keys))
        if self.return_state:
            space = getattr(env, "state_space", None)
            if space is not None:
                spec, leaves = space_to_spec(space, device=device, key=("state",), copy=True)
            else:
                example = np.asarray(env.state())
                spec = Unbounded(example.shape, dtype=torch.from_numpy(example).dtype, device=device)
                leaves = None
            obs_spec["state"] = spec
            self.__dict__["_state_leaf"] = leaves[0] if leaves else None
        self.__dict__["_groups"] = groups
        self.full_action_spec = act_spec
        self.observation_spec = obs_spec
        self.full_reward_spec = rew_spec
        self.full_done_spec = done_spec

    # ------------------------------------------------------------------ library calls
    def _library_reset(self, seed: int | None = None) -> tuple[dict, dict]:
        env = self._env
        if self.parallel:
            obs, info = env.reset(seed=seed)
            return obs, info
        env.reset(seed=seed)
        return {a: env.observe(a) for a in env.agents}, dict(env.infos)

    def _acting(self) -> set:
        env = self._env
        return set(env.agents) if self.parallel else {env.agent_selection}

    # ------------------------------------------------------------------ conversion
    def _output(
        self, obs: dict, info: dict, rewards: dict | None, terms: dict | None, truncs: dict | None
    ) -> TensorDictBase:
        acting = self._acting()
        src: dict = {}
        flags = {k: [] for k in _FLAGS}
        for g in self._groups:
            node: dict = {}
            present = [a in obs for a in g.agents]
            if not all(present) and not self.use_mask:
                missing = [a for a, p in zip(g.agents, present) if not p]
                raise ValueError(
                    f"the agents {missing} left the episode; wrap with use_mask=True for envs whose agents may leave"
                )
            for leaf, zero in zip(g.obs_leaves, g.obs_zero):
                sub = leaf.path
                values = [_at(obs[a], sub) if p else zero for a, p in zip(g.agents, present)]
                value = leaf.to_torch(np.stack(values))
                dst = node
                for name in leaf.key[1:-1]:
                    dst = dst.setdefault(name, {})
                dst[leaf.key[-1]] = value
            if g.mask_in is not None:
                mask = np.ones((g.n, g.n_actions), dtype=bool)
                for i, a in enumerate(g.agents):
                    if a in acting and present[i]:
                        source = obs[a] if g.mask_in == "observation" else info.get(a, {})
                        mask[i] = np.asarray(source["action_mask"], dtype=bool)
                node["action_mask"] = torch.from_numpy(mask)
            if g.info_keys:
                node["info"] = {
                    k: torch.as_tensor(
                        np.stack([np.asarray(info.get(a, {}).get(k, 0), dtype=np.float32) for a in g.agents]),
                    ).reshape(self.full_observation_spec[g.name, "info", k].shape)
                    for k in g.info_keys
                }
            if self.use_mask:
                node["mask"] = torch.tensor([a in acting for a in g.agents], dtype=torch.bool)
            if rewards is not None:
                node["reward"] = torch.tensor([[float(rewards.get(a, 0.0))] for a in g.agents], dtype=torch.float32)
                term = np.array([[bool(terms.get(a, True))] for a in g.agents])
                trunc = np.array([[bool(truncs.get(a, True))] for a in g.agents])
            else:
                term = trunc = np.zeros((g.n, 1), dtype=bool)
            node["terminated"] = torch.from_numpy(term)
            node["truncated"] = torch.from_numpy(trunc)
            node["done"] = torch.from_numpy(term | trunc)
            for k, v in (("terminated", term), ("truncated", trunc), ("done", term | trunc)):
                flags[k].append(v)
            src[g.name] = new_td(node, torch.Size([g.n]), self._edge.host_device)
        if rewards is None:
            root = torch.zeros(len(_FLAGS), 1, dtype=torch.bool)
        elif self.done_on_any:
            root = torch.tensor([[any(bool(v.any()) for v in flags[k])] for k in _FLAGS])
        else:
            root = torch.tensor([[all(bool(v.all()) for v in flags[k])] for k in _FLAGS])
        for k, value in zip(_FLAGS, root):  # one allocation, a (1,) view per flag
            src[k] = value
        if self.return_state:
            state = np.asarray(self._env.state())
            leaf = self._state_leaf
            src["state"] = leaf.to_torch(state) if leaf is not None else torch.from_numpy(state.copy())
        td = new_td(src, torch.Size([]), self._edge.host_device)
        self._update_action_masks(td)
        return self._to_device(td)

    def _update_action_masks(self, td: TensorDictBase) -> None:
        for g in self._groups:
            if g.mask_in is None:
                continue
            spec = self.full_action_spec[g.name, "action"]
            if isinstance(spec, (Categorical, OneHot)):
                spec.update_mask(td.get((g.name, "action_mask")).to(self.device))

    # ------------------------------------------------------------------ EnvBase hooks
    def _reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs: Any) -> TensorDictBase:
        if self._selects_nothing(masks):  # the merge keeps the previous data; the library is left as it is
            return self._previous_or_zeros()
        if any(m is not None and not bool(m.all()) for m in masks.masks):
            raise ValueError(
                "PettingZoo envs reset every agent at once: a '_reset' entry must select every agent "
                "(use the root '_reset')"
            )
        seed = kwargs.pop("seed", None)
        self._no_kwargs(kwargs)
        first = self.__dict__.pop("_first", None)
        if first is not None and seed is None:
            obs, info = first
        else:
            obs, info = self._library_reset(seed)
        return self._output(obs, info, None, None, None)

    def _actions(self, tensordict: TensorDictBase) -> dict:
        actions = {}
        for g in self._groups:
            if len(g.act_leaves) == 1 and not g.act_leaves[0].path:
                stacked = g.act_leaves[0].to_numpy(tensordict.get(g.act_leaves[0].key))
            else:
                stacked = {}
                for leaf in g.act_leaves:
                    dst = stacked
                    for p in leaf.path[:-1]:
                        dst = dst.setdefault(p, {})
                    dst[leaf.path[-1]] = leaf.to_numpy(tensordict.get(leaf.key))
            for i, a in enumerate(g.agents):
                actions[a] = _index(stacked, i)
        return actions

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.__dict__.pop("_first", None)
        env = self._env
        actions = self._actions(tensordict)
        if self.parallel:
            live = set(env.agents)
            obs, rewards, terms, truncs, info = env.step({a: v for a, v in actions.items() if a in live})
        else:
            agent = env.agent_selection
            done = env.terminations.get(agent, False) or env.truncations.get(agent, False)
            env.step(None if done else actions[agent])
            # AEC: every possible agent's latest observation; the library's flags/rewards dicts
            obs = {a: env.observe(a) for a in env.agents}
            rewards, terms, truncs, info = env.rewards, env.terminations, env.truncations, env.infos
            for a in self.possible_agents:  # agents removed from the game: their last flags
                if a not in env.agents:
                    terms = {**terms, a: terms.get(a, True)}
        return self._output(obs, info, rewards, terms, truncs)

    def _set_seed(self, seed: int | None) -> None:
        self.seed = seed
        self.__dict__.pop("_first", None)
        self.__dict__["_first"] = self._library_reset(seed)


def _find_task(task: str) -> Any:
    """The PettingZoo module of ``task`` (``"tictactoe_v3"`` or ``"classic/tictactoe_v3"``); MPE
    tasks come from the ``mpe2`` package."""
    family, _, name = task.rpartition("/")
    families = [family] if family else list(_FAMILIES)
    errors = []
    for fam in families:
        package = "mpe2" if fam == "mpe" else f"pettingzoo.{fam}"
        try:
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as err:
            if err.name and (err.name.endswith(name) or err.name == package):
                continue
            errors.append(f"{package}.{name}: {err}")
        except ImportError as err:
            errors.append(f"{package}.{name}: {err}")
    detail = f" (found but could not import: {'; '.join(errors)})" if errors else ""
    raise ValueError(f"unknown PettingZoo task {task!r}{detail}; give '<family>/<task>' e.g. 'classic/tictactoe_v3'")


class PettingZooEnv(PettingZooWrapper):
    """Builds a PettingZoo task by name and wraps it.

    Args:
        task: ``"<task>"`` or ``"<family>/<task>"`` (``"tictactoe_v3"``, ``"classic/rps_v2"``;
            ``"mpe/simple_spread_v3"`` comes from the ``mpe2`` package).
        parallel: build the parallel API version (``module.parallel_env``) or the AEC one
            (``module.env``).
        return_state, group_map, use_mask, categorical_actions, seed, done_on_any, device: see
            :class:`PettingZooWrapper`.
        **kwargs: forwarded to the task constructor (``max_cycles=25``).

    Raises:
        ValueError: an unknown task; a task without a parallel version with ``parallel=True``.
        TypeError: a keyword argument the task rejects (naming it).
        ImportError: pettingzoo is missing (saying ``pip install pettingzoo``).

    Examples:
        >>> env = PettingZooEnv("rps_v2", parallel=True, seed=0, max_cycles=5)
        >>> env.rollout(10).shape  # stops at the step where the 5 cycles end
        torch.Size([5])
    """

    def __init__(
        self,
        task: str,
        parallel: bool,
        return_state: bool = False,
        group_map: MarlGroupMapType | dict | None = None,
        use_mask: bool = False,
        categorical_actions: bool = True,
        seed: int | None = None,
        done_on_any: bool | None = None,
        *,
        device: torch.device | str | int | None = None,
        **kwargs: Any,
    ) -> None:
        _import_pettingzoo("PettingZooEnv")
        module = _find_task(task)
        maker = getattr(module, "parallel_env" if parallel else "env", None)
        if maker is None:
            raise ValueError(f"the PettingZoo task {task!r} has no {'parallel' if parallel else 'AEC'} version")
        try:
            env = maker(**kwargs)
        except TypeError as err:
            raise TypeError(
                f"PettingZooEnv({task!r}): the task rejected the keyword arguments {sorted(kwargs)}: {err}"
            ) from err
        self.__dict__["task"] = task
        super().__init__(
            env,
            return_state=return_state,
            group_map=group_map,
            use_mask=use_mask,
            categorical_actions=categorical_actions,
            seed=seed,
            done_on_any=done_on_any,
            device=device,
        )

    def __repr__(self) -> str:
        return f"PettingZooEnv(task={self.task!r}, parallel={self.parallel}, group_map={self.group_map}, device={self.device})"
