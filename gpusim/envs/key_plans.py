"""The key plans of :class:`~gpusim.envs.common.EnvBase`: the key lists and the episode plan
derived from the locked specs (``action_keys``, ``done_keys``, ``reset_keys``, ``episode``, ...).

Each is a :func:`~gpusim.envs.env_specs._cached_plan` property: computed once from the locked
specs and kept in ``env._cache`` until they change; the step path reads it with one dict lookup.

Examples:
    >>> from gpusim.envs.native import TicTacToeEnv
    >>> env = TicTacToeEnv()
    >>> env.reward_keys, env.reset_keys
    ([('player0', 'reward'), ('player1', 'reward')], ['_reset'])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpusim.envs import _keys
from gpusim.envs._keys import DoneLevel, NestedKey
from gpusim.envs.env_specs import _cached_plan
from gpusim.envs.episode import EpisodePlan

__all__ = ["KeyPlans"]


class KeyPlans:
    """Mixin of :class:`~gpusim.envs.common.EnvBase`: the key lists and the episode plan.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[2])
        >>> env.action_keys, env.done_keys, env.episode is env.episode
        (['action'], ['done', 'terminated'], True)
    """

    # ------------------------------------------------------------------ key plans (cached)
    def _cached(self, name: str, fn: Callable[[], Any]) -> Any:
        cache = self._cache
        if name not in cache:
            cache[name] = fn()
        return cache[name]

    @_cached_plan
    def action_keys(self) -> list[NestedKey]:
        """The leaf keys of ``full_action_spec`` (cached until the specs change).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv().action_keys
            ['action']
        """
        return _keys.leaf_keys(self.full_action_spec)

    @_cached_plan
    def reward_keys(self) -> list[NestedKey]:
        """The leaf keys of ``full_reward_spec`` (nested keys as tuples).

        Examples:
            >>> from gpusim.envs.native import TicTacToeEnv
            >>> TicTacToeEnv().reward_keys
            [('player0', 'reward'), ('player1', 'reward')]
        """
        return _keys.leaf_keys(self.full_reward_spec)

    @_cached_plan
    def done_keys(self) -> list[NestedKey]:
        """The leaf keys of ``full_done_spec``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv().done_keys
            ['done', 'terminated']
        """
        return _keys.leaf_keys(self.full_done_spec)

    @_cached_plan
    def state_keys(self) -> list[NestedKey]:
        """The leaf keys of ``full_state_spec``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv().state_keys
            ['state']
        """
        return _keys.leaf_keys(self.full_state_spec)

    @_cached_plan
    def observation_keys(self) -> list[NestedKey]:
        """The leaf keys of ``full_observation_spec``.

        Examples:
            >>> from gpusim.envs.native import TicTacToeEnv
            >>> TicTacToeEnv().observation_keys
            ['board', 'turn', 'mask']
        """
        return _keys.leaf_keys(self.full_observation_spec)

    @_cached_plan
    def episode(self) -> EpisodePlan:
        """The env's episode plan (done levels, reset rules, merge), built once from the locked
        specs; see :mod:`gpusim.envs.episode`.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2])
            >>> type(env.episode).__name__, env.episode is env.episode  # built once
            ('EpisodePlan', True)
        """
        return EpisodePlan(self.full_done_spec, self.batch_size)

    @property
    def done_levels(self) -> list[DoneLevel]:
        """The done levels (root first), each with its keys, reset key and batch shape.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> (level,) = CartPoleEnv(batch_size=[2]).done_levels
            >>> level.prefix, level.reset_key
            ((), '_reset')
        """
        return self.episode.levels

    @property
    def done_keys_groups(self) -> list[list[NestedKey]]:
        """The done keys grouped by done level (root first), as TorchRL's ``done_keys_groups``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv().done_keys_groups
            [['done', 'terminated']]
        """
        return [list(level.keys) for level in self.done_levels]

    @_cached_plan
    def reset_keys(self) -> list[NestedKey]:
        """One ``"_reset"`` key per done level.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv().reset_keys
            ['_reset']
        """
        return [level.reset_key for level in self.done_levels]

    def _single(self, keys: list, what: str) -> NestedKey:
        if len(keys) == 1:
            return keys[0]
        raise KeyError(f"{what} is ambiguous: the env has {len(keys)} {what}s {keys}; use {what}s instead")

    @property
    def action_key(self) -> NestedKey:
        """The action key, when the env has exactly one.

        Raises:
            KeyError: the env has several action keys (use ``action_keys``).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv().action_key
            'action'
        """
        return self._single(self.action_keys, "action_key")

    @property
    def reward_key(self) -> NestedKey:
        """The reward key, when the env has exactly one.

        Raises:
            KeyError: the env has several reward keys (use ``reward_keys``).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv, TicTacToeEnv
            >>> CartPoleEnv().reward_key
            'reward'
            >>> TicTacToeEnv().reward_key
            Traceback (most recent call last):
            ...
            KeyError: "reward_key is ambiguous: the env has 2 reward_keys [('player0', 'reward'), ('player1', 'reward')]; use reward_keys instead"
        """
        return self._single(self.reward_keys, "reward_key")

    @property
    def done_key(self) -> NestedKey:
        """The ``done`` key, when the env has exactly one done level.

        Raises:
            KeyError: several ``done`` entries (use ``done_keys``).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv().done_key
            'done'
        """
        return self._single([k for k in self.done_keys if _keys.as_tuple(k)[-1] == "done"], "done_key")

    @_cached_plan
    def _has_dynamic_specs(self) -> bool:
        """Whether a spec leaf has a dynamic (``-1``) dim (TorchRL's name): such steps do not
        stack into a contiguous tensordict."""
        from gpusim.specs.utils import has_dynamic_dims

        return has_dynamic_dims(self.input_spec) or has_dynamic_dims(self.output_spec)

    @_cached_plan
    def _echo_state_keys(self) -> list[NestedKey]:
        """State keys that ``step`` copies into ``"next"`` when ``_step`` does not produce them."""
        observation_keys = set(self.observation_keys)
        return [k for k in self.state_keys if k not in observation_keys]

    def empty_cache(self) -> None:
        """Drops the cached key plans (they are rebuilt on next use).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv()
            >>> plan = env.episode
            >>> env.empty_cache()
            >>> env.episode is plan
            False
        """
        self._cache.clear()
