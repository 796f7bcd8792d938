"""``OpenSpielWrapper`` and ``OpenSpielEnv``: `OpenSpiel <https://github.com/google-deepmind/open_spiel>`_
games as gpusim multi-agent envs.

Layout (TorchRL's documented one): ``batch_size=[]``; players ``player_0..player_{n-1}`` are grouped
(default: all in ``"agents"``, ``MarlGroupMapType.ALL_IN_ONE_GROUP``); each group holds
``observation`` (when the game provides observation tensors), ``information_state`` (when it
provides information-state tensors), ``reward`` ``(n, 1)`` and the ``action`` (one-hot over
``num_distinct_actions`` unless ``categorical_actions=True``); the root holds ``done`` and
``terminated`` ``(1,)``, ``current_player`` (int32 ``[]``) and, with ``return_state``, the
serialized game ``state`` (non-tensor text, which an explicit ``reset(td)`` restores; auto-resets
of finished games start a new game).

Turns: in sequential games a step applies the action of ``current_player`` (its group entry) and
ignores the others; in simultaneous-move games every player's action is applied. The action spec's
mask follows the legal actions after every reset and step (a player who is not to act may only
play action 0), so ``env.rand_action()`` draws legal moves. Chance nodes are resolved between
decisions by sampling the outcomes with the env's generator (``set_seed``) or ``chance_sampler``.

Reward: the change of each player's return over the step (``returns()`` after minus before),
so chance outcomes resolved within the step count, and a game's rewards add up to its returns.
(TorchRL's wrapper reports the running return ``returns()`` itself.)

Examples:
    >>> env = OpenSpielEnv("tic_tac_toe", seed=0)
    >>> env.group_map
    {'agents': ['player_0', 'player_1']}
    >>> td = env.rand_step(env.reset())
    >>> td["next", "agents", "observation"].shape, td["next", "current_player"].item()
    (torch.Size([2, 3, 3, 3]), 1)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from gpusim.envs._fasttd import new_td
from gpusim.envs.common import _cached_plan
from gpusim.envs.episode import AutoResetMode, ResetMasks
from gpusim.envs.libs._optional import import_optional
from gpusim.envs.libs._wrapper import LibraryWrapper
from gpusim.envs.libs.marl import MarlGroupMapType, check_marl_grouping
from gpusim.specs import Categorical, Composite, NonTensor, OneHot, Unbounded

__all__ = ["OpenSpielWrapper", "OpenSpielEnv"]


def _import_pyspiel(what: str) -> Any:
    return import_optional("pyspiel", "open_spiel", extra="open_spiel", what=what)


class OpenSpielWrapper(LibraryWrapper):
    """Wraps an OpenSpiel game state (``pyspiel.State``, e.g. ``game.new_initial_state()``).

    Args:
        env: the state to start from (its game defines the env).
        group_map: a ``MarlGroupMapType`` or ``{group: [player_i, ...]}`` (default: one
            ``"agents"`` group).
        categorical_actions: actions as indices instead of one-hot.
        return_state: add the serialized ``state`` (restorable through ``reset``).
        chance_sampler: ``(outcomes, probabilities) -> outcome``; default: the env's generator.
        seed: the seed of the chance generator.
        device: where the data lives (moved there once per step).

    Raises:
        TypeError: ``env`` is not a ``pyspiel.State``; an unknown keyword argument.
        ValueError: mean-field games (not supported, as in TorchRL); a bad group map.

    Examples:
        >>> import pyspiel
        >>> env = OpenSpielWrapper(pyspiel.load_game("kuhn_poker").new_initial_state(), categorical_actions=True)
        >>> sorted(env.observation_spec["agents"].keys())
        ['information_state', 'observation']
    """

    library = "OpenSpiel"

    def __init__(
        self,
        env: Any = None,
        *,
        group_map: MarlGroupMapType | dict | None = None,
        categorical_actions: bool = False,
        return_state: bool = False,
        chance_sampler: Callable[[list, list], int] | None = None,
        seed: int | None = None,
        device: torch.device | str | int | None = None,
        batch_size: Any = None,
        allow_done_after_reset: bool = False,
        **kwargs: Any,
    ) -> None:
        self._no_kwargs(kwargs, "__init__")
        pyspiel = _import_pyspiel(type(self).__name__)
        if not isinstance(env, pyspiel.State):
            raise TypeError(
                f"{type(self).__name__} expects a pyspiel.State (game.new_initial_state()), got {type(env).__name__}"
            )
        if batch_size is not None and tuple(torch.Size(batch_size)) != ():
            raise ValueError(f"OpenSpiel envs are single games: batch_size must be [], got {list(batch_size)}")
        game = env.get_game()
        gtype = game.get_type()
        if gtype.dynamics == pyspiel.GameType.Dynamics.MEAN_FIELD:
            raise ValueError(f"mean-field games ({gtype.short_name!r}) are not supported")
        super().__init__(
            device=device,
            batch_size=[],
            allow_done_after_reset=allow_done_after_reset,
            auto_reset_mode=AutoResetMode.SPARSE,
        )
        self.__dict__["_lib"] = pyspiel
        self.__dict__["_game"] = game
        self.__dict__["_initial"] = env.clone()
        self._wrap(env)
        self.__dict__["_rng"] = np.random.default_rng(seed)
        self.chance_sampler = chance_sampler
        self.categorical_actions = categorical_actions
        self.return_state = return_state
        self.parallel = gtype.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS
        self.has_observation = gtype.provides_observation_tensor
        self.has_information_state = gtype.provides_information_state_tensor
        self.agent_names = [f"player_{i}" for i in range(game.num_players())]
        if group_map is None:
            group_map = MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(self.agent_names)
        elif isinstance(group_map, MarlGroupMapType):
            group_map = group_map.get_group_map(self.agent_names)
        check_marl_grouping(group_map, self.agent_names)
        self.group_map = {g: list(m) for g, m in group_map.items()}
        self.__dict__["_index"] = {name: i for i, name in enumerate(self.agent_names)}
        self._build_specs()

    def _build_specs(self) -> None:
        game = self._game
        dev = self.device
        n_actions = game.num_distinct_actions()
        obs = Composite(current_player=Unbounded((), dtype=torch.int32, device=dev), device=dev)
        act = Composite(device=dev)
        rew = Composite(device=dev)
        for group, members in self.group_map.items():
            n = len(members)
            node = Composite(shape=(n,), device=dev)
            if self.has_observation:
                node["observation"] = Unbounded((n, *game.observation_tensor_shape()), device=dev)
            if self.has_information_state:
                node["information_state"] = Unbounded((n, *game.information_state_tensor_shape()), device=dev)
            obs[group] = node
            if self.categorical_actions:
                a = Categorical(n_actions, shape=(n,), dtype=torch.int64, device=dev)
            else:
                a = OneHot(n_actions, shape=(n, n_actions), dtype=torch.int64, device=dev)
            act[group] = Composite(action=a, shape=(n,), device=dev)
            rew[group] = Composite(reward=Unbounded((n, 1), device=dev), shape=(n,), device=dev)
        if self.return_state:
            obs["state"] = NonTensor(shape=(), device=dev, example_data="")
        self.observation_spec = obs
        self.full_action_spec = act
        self.full_reward_spec = rew
        flag = Categorical(2, shape=(1,), dtype=torch.bool, device=dev)
        self.full_done_spec = Composite(done=flag, terminated=flag.clone(), device=dev)

    # ------------------------------------------------------------------ attributes
    @property
    def lib(self) -> Any:
        """The pyspiel module.

        Examples:
            >>> OpenSpielEnv("tic_tac_toe", seed=0).lib.__name__
            'pyspiel'
        """
        return self._lib

    def current_player(self) -> int:
        """The player to act (OpenSpiel's id: negative for terminal/chance/simultaneous).

        Examples:
            >>> env = OpenSpielEnv("tic_tac_toe", seed=0)
            >>> td = env.reset()
            >>> env.current_player()
            0
            >>> _ = env.rand_step(td)
            >>> env.current_player()  # the players alternate
            1
        """
        return self._env.current_player()

    # ------------------------------------------------------------------ game mechanics
    def _resolve_chance(self) -> None:
        state = self._env
        while state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            if self.chance_sampler is not None:
                outcome = self.chance_sampler(list(outcomes), list(probs))
            else:
                outcome = outcomes[self._rng.choice(len(outcomes), p=np.asarray(probs) / np.sum(probs))]
            state.apply_action(int(outcome))

    @_cached_plan
    def _mask_plan(self) -> list:
        """``(action spec leaf, player indices)`` of every group (cached until the specs change)."""
        spec = self.full_action_spec
        return [(spec[group, "action"], [self._index[m] for m in members]) for group, members in self.group_map.items()]

    def _masks(self) -> None:
        state = self._env
        n_actions = self._game.num_distinct_actions()
        terminal = state.is_terminal()
        acting = (
            set() if terminal else (set(range(len(self.agent_names))) if self.parallel else {state.current_player()})
        )
        for spec, players in self._mask_plan:
            mask = np.zeros((len(players), n_actions), dtype=bool)
            for j, i in enumerate(players):
                if i in acting:
                    mask[j, state.legal_actions(i)] = True
                else:
                    mask[j, 0] = True  # a player who is not to act plays the no-op index 0
            spec.update_mask(torch.from_numpy(mask).to(self.device))

    def _output(self, before: np.ndarray | None) -> TensorDictBase:
        state = self._env
        game = self._game
        done = torch.tensor([state.is_terminal()])
        src: dict = {
            "done": done,
            "terminated": done.clone(),
            "current_player": torch.tensor(state.current_player(), dtype=torch.int32),
        }
        returns = np.asarray(state.returns(), dtype=np.float32)
        for group, members in self.group_map.items():
            idx = [self._index[m] for m in members]
            node: dict = {}
            if self.has_observation:
                shape = game.observation_tensor_shape()
                node["observation"] = torch.tensor(
                    np.array([state.observation_tensor(i) for i in idx], dtype=np.float32)
                ).reshape(len(idx), *shape)
            if self.has_information_state:
                shape = game.information_state_tensor_shape()
                node["information_state"] = torch.tensor(
                    np.array([state.information_state_tensor(i) for i in idx], dtype=np.float32)
                ).reshape(len(idx), *shape)
            if before is not None:
                node["reward"] = torch.from_numpy((returns[idx] - before[idx]).reshape(len(idx), 1))
            src[group] = new_td(node, torch.Size([len(idx)]), self._edge.host_device)
        td = new_td(src, torch.Size([]), self._edge.host_device)
        if self.return_state:
            td.set_non_tensor("state", state.serialize())
        self._masks()
        return self._to_device(td)

    def _action_of(self, tensordict: TensorDictBase, name: str) -> int:
        for group, members in self.group_map.items():
            if name in members:
                value = tensordict.get((group, "action"))[members.index(name)]
                return int(value.argmax(-1) if not self.categorical_actions else value)
        raise KeyError(name)  # unreachable: the group map covers every player

    # ------------------------------------------------------------------ EnvBase hooks
    def _reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs: Any) -> TensorDictBase:
        self._no_kwargs(kwargs)
        if self._selects_nothing(masks):
            return self._previous_or_zeros()  # nothing to reset: the merge keeps the data
        # an explicit reset restores a given "state"; an auto-reset (finished game) starts anew
        serialized = None if tensordict is None or masks.auto else tensordict.get("state", None)
        if serialized is not None and self.return_state:
            text = serialized if isinstance(serialized, str) else serialized.data
            self.__dict__["_env"] = self._game.deserialize_state(text)
        else:
            self.__dict__["_env"] = self._initial.clone()
        self._resolve_chance()
        return self._output(None)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        state = self._env
        before = np.asarray(state.returns(), dtype=np.float32)
        if not state.is_terminal():
            if self.parallel:
                state.apply_actions([self._action_of(tensordict, name) for name in self.agent_names])
            else:
                player = state.current_player()
                action = self._action_of(tensordict, self.agent_names[player])
                if action not in state.legal_actions(player):
                    raise ValueError(
                        f"{type(self).__name__}.step: action {action} is not legal for {self.agent_names[player]} "
                        f"(legal: {state.legal_actions(player)})"
                    )
                state.apply_action(action)
            self._resolve_chance()
        return self._output(before)

    def _set_seed(self, seed: int | None) -> None:
        self.__dict__["_rng"] = np.random.default_rng(seed)


class OpenSpielEnv(OpenSpielWrapper):
    """Loads an OpenSpiel game by name (``pyspiel.load_game``) and wraps its initial state.

    Args:
        game_string: the game (``"tic_tac_toe"``, ``"kuhn_poker"``, ``"chess"``, with parameters
            as ``"name(param=value)"``).
        **kwargs: :class:`OpenSpielWrapper`'s arguments.

    Raises:
        ValueError: an unknown game (naming a few known ones).
        ImportError: open_spiel is missing (saying ``pip install open_spiel``).

    Examples:
        >>> env = OpenSpielEnv("kuhn_poker", categorical_actions=True, seed=0)
        >>> data = env.rollout(10)
        >>> float(data["next", "agents", "reward"].sum())  # zero-sum
        0.0
    """

    def __init__(self, game_string: str, **kwargs: Any) -> None:
        pyspiel = _import_pyspiel("OpenSpielEnv")
        try:
            game = pyspiel.load_game(game_string)
        except pyspiel.SpielError as err:
            known = [g.short_name for g in pyspiel.registered_games()][:15]
            raise ValueError(f"unknown OpenSpiel game {game_string!r} ({err}); known games include {known}") from err
        self.__dict__["game_string"] = game_string
        super().__init__(game.new_initial_state(), **kwargs)

    def __repr__(self) -> str:
        return f"OpenSpielEnv(game={self.game_string!r}, group_map={self.group_map}, device={self.device})"
