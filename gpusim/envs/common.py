"""``EnvBase``: the batched environment base class.

An environment author writes the specs, ``_reset``, ``_step`` and ``_set_seed``; the base class
owns the episode machinery: done completion, partial resets through ``"_reset"``, ``step``,
``step_and_maybe_reset``, ``rollout``, seeding and spec bookkeeping. Key plans are computed once,
when the specs are locked, never per step.

Examples:
    >>> from gpusim import CartPoleEnv  # an EnvBase: the author wrote _reset, _step, _set_seed
    >>> env = CartPoleEnv(batch_size=[4], seed=0)
    >>> data, next_root = env.step_and_maybe_reset(env.rand_action(env.reset()))
    >>> data["next", "observation"].shape, env.auto_reset_mode.value
    (torch.Size([4, 4]), 'sparse')

    How to write an env is shown in :class:`EnvBase`'s docstring.
"""

from __future__ import annotations

import abc
import os
from typing import TYPE_CHECKING, Any, Callable, Iterator

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase
from torch import nn

from gpusim.envs import _keys
from gpusim.envs._fasttd import fast_get, fast_set
from gpusim.envs._keys import DoneLevel, NestedKey
from gpusim.envs._seeding import next_seed
from gpusim.envs.episode import AutoResetMode, EpisodePlan, ResetMasks
from gpusim.envs._rollout_stack import stack_steps
from gpusim.envs._step_mdp import StepMDPPlan
from gpusim.specs import Categorical, Composite, TensorSpec, Unbounded

if TYPE_CHECKING:
    from gpusim.envs.compiled import CompiledRollout

__all__ = ["EnvBase"]

_SPEC_NAMES = {
    "full_action_spec": "input_spec",
    "full_state_spec": "input_spec",
    "full_observation_spec": "output_spec",
    "full_reward_spec": "output_spec",
    "full_done_spec": "output_spec",
}


class _EnvPostInit(abc.ABCMeta):
    """Runs :meth:`EnvBase._post_init` (spec completion and locking) after ``__init__``."""

    def __call__(cls, *args, **kwargs):
        instance = super().__call__(*args, **kwargs)
        instance._post_init()
        return instance


def _cached_plan(fn: Callable[[Any], Any]) -> property:
    """A property computed once from the (locked) specs and kept in ``env._cache`` until the
    specs change. The hot path reads it with one dict lookup."""
    name = fn.__name__

    def getter(self):
        cache = self._cache
        value = cache.get(name, _MISSING)
        if value is _MISSING:
            value = cache[name] = fn(self)
        return value

    getter.__doc__ = fn.__doc__
    return property(getter)


_MISSING = object()


def _as_size(batch_size) -> torch.Size:
    if batch_size is None:
        return torch.Size([])
    if isinstance(batch_size, int):
        batch_size = [batch_size]
    try:
        size = torch.Size(batch_size)
    except TypeError as err:
        raise TypeError(f"batch_size must be a sequence of ints, got {batch_size!r}") from err
    if any(s <= 0 for s in size):
        raise ValueError(
            f"batch_size must hold positive sizes (an env needs at least one row per batch dim), got {list(size)}"
        )
    return size


def _as_device(device) -> torch.device:
    device = torch.device("cpu") if device is None else torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            f"device={str(device)!r} was requested but CUDA is not available on this machine "
            "(torch.cuda.is_available() is False); use device='cpu'"
        )
    return device


class EnvBase(nn.Module, metaclass=_EnvPostInit):
    """Abstract batched environment with the TorchRL ``EnvBase`` interface.

    Subclasses set ``observation_spec``, ``action_spec``, ``reward_spec``, ``done_spec`` and
    optionally ``state_spec`` in ``__init__``, and implement ``_reset``, ``_step`` and
    ``_set_seed``. After ``__init__`` the specs are completed (every done level gets ``done``
    and ``terminated``) and locked. The base class owns the episode machinery (partial resets,
    auto-reset, rollouts), executed by :mod:`gpusim.envs.episode`.

    Hooks (the extension API; everything else is the base class's):

    * ``_step(tensordict) -> next``, ``_reset(tensordict, **kwargs) -> reset data``,
      ``_set_seed(seed)``: what an environment author writes (TorchRL's hooks). ``_reset`` may
      read the ``"_reset"`` entries of its input (resolved and checked by the base class).
    * ``_reset_rows(tensordict, masks, **kwargs) -> reset data``: the one hook a wrapper, batched
      env or container overrides to reset the rows of ``masks``
      (:class:`~gpusim.envs.episode.ResetMasks`) its own way (default: ``_reset`` plus done
      completion).
    * ``_step_output(tensordict) -> next``: the complete ``"next"`` data of a step (``_step``
      plus done completion and state echo), for containers that step an inner env
      (``TransformedEnv``, frame skip, no-op starts, batched workers). Not overridden.

    Args:
        device: the device of the env's data (``None``: CPU). ``"cuda"`` on a machine without
            CUDA raises.
        batch_size: the batch dims of the env (``[]`` for a single env); every dim positive.
        run_type_checks: debug mode: check every action's values against the action spec and
            every step and reset output against the specs (slow). Also on when the environment
            variable ``GPUSIM_VALIDATE=1`` is set when the env is built.
        allow_done_after_reset: kept for API compatibility (no per-step check is made).
        spec_locked: lock the specs after construction.
        auto_reset_mode: how ``step_and_maybe_reset`` resets finished rows
            (:class:`~gpusim.envs.episode.AutoResetMode`: ``"masked"`` or ``"sparse"``; ``None``:
            sparse on the CPU, masked elsewhere). Results do not depend on it.

    Every ``step`` checks the action leaves' shapes and dtypes against the action spec (metadata
    only, no device sync) and raises naming the key, the expected and the received value.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from gpusim.specs import Composite, Unbounded, Categorical
        >>> class Counter(EnvBase):
        ...     def __init__(self, batch_size=()):
        ...         super().__init__(batch_size=batch_size)
        ...         B = self.batch_size
        ...         self.observation_spec = Composite(count=Unbounded((*B, 1)), shape=B)
        ...         self.state_spec = Composite(count=Unbounded((*B, 1)), shape=B)
        ...         self.action_spec = Categorical(2, shape=B)
        ...     def _reset(self, td):
        ...         zeros = torch.zeros(*self.batch_size, 1)
        ...         return TensorDict({"count": zeros, "done": zeros.bool()}, self.batch_size)
        ...     def _step(self, td):
        ...         count = td["count"] + 1
        ...         return TensorDict({"count": count, "reward": count,
        ...                            "done": count >= 3}, self.batch_size)
        ...     def _set_seed(self, seed):
        ...         pass
        >>> env = Counter(batch_size=[2])
        >>> env.rollout(10).shape
        torch.Size([2, 3])
        >>> env.step(env.reset().set("action", torch.zeros(2, 1, dtype=torch.long)))
        Traceback (most recent call last):
        ...
        ValueError: Counter.step: the action 'action' has shape [2, 1], expected [2] (the action spec's shape)
    """

    #: Whether ``_step`` is a pure function of its input (the state lives in the tensordict, as in
    #: the native envs): a row can then be stepped and its result discarded without changing the
    #: env. Transforms that step some rows only (no-op starts) need it on batched envs.
    functional_step: bool = False

    def __init__(
        self,
        *,
        device: torch.device | str | int | None = None,
        batch_size: Any = None,
        run_type_checks: bool = False,
        allow_done_after_reset: bool = False,
        spec_locked: bool = True,
        auto_reset_mode: AutoResetMode | str | None = None,
    ) -> None:
        super().__init__()
        self.__dict__["_cache"] = {}
        self.__dict__["_spec_locked"] = spec_locked
        self.__dict__["_locked_now"] = False
        self.__dict__["_closed"] = False
        self.__dict__["_device"] = _as_device(device)
        self.__dict__["_batch_size"] = _as_size(batch_size)
        self.__dict__["_auto_reset_mode"] = (
            None if auto_reset_mode is None else AutoResetMode.parse(auto_reset_mode, self._device)
        )
        self.run_type_checks = bool(run_type_checks) or os.environ.get("GPUSIM_VALIDATE", "0") not in ("", "0")
        self.allow_done_after_reset = allow_done_after_reset
        self.batch_locked = True
        B = self.batch_size
        self.__dict__["_input_spec"] = Composite(
            full_action_spec=Composite(shape=B, device=self.device),
            full_state_spec=Composite(shape=B, device=self.device),
            shape=B,
            device=self.device,
        )
        self.__dict__["_output_spec"] = Composite(
            full_observation_spec=Composite(shape=B, device=self.device),
            full_reward_spec=Composite(shape=B, device=self.device),
            full_done_spec=Composite(shape=B, device=self.device),
            shape=B,
            device=self.device,
        )

    @property
    def auto_reset_mode(self) -> AutoResetMode:
        """How ``step_and_maybe_reset`` resets finished rows (chosen at construction; by default
        ``SPARSE`` on the CPU and ``MASKED`` on other devices). See :mod:`gpusim.envs.episode`."""
        mode = self.__dict__.get("_auto_reset_mode")
        return AutoResetMode.parse(mode, self.device)

    def _sparse_now(self) -> bool:
        """Whether this call may read reset rows on the host (``SPARSE`` mode, not compiling)."""
        return self.auto_reset_mode is AutoResetMode.SPARSE and not torch.compiler.is_compiling()

    # ------------------------------------------------------------------ construction
    def _post_init(self) -> None:
        B = self.batch_size
        full_reward = self.output_spec["full_reward_spec"]
        if len(full_reward.keys()) == 0:
            self._set_full("full_reward_spec", Composite(reward=Unbounded((*B, 1), device=self.device), shape=B, device=self.device))
        if len(self.output_spec["full_done_spec"].keys()) == 0:
            self._set_full(
                "full_done_spec",
                Composite(
                    done=Categorical(2, shape=(*B, 1), dtype=torch.bool, device=self.device),
                    shape=B,
                    device=self.device,
                ),
            )
        self._complete_done_spec()
        if self._spec_locked:
            self._lock_specs()

    def _complete_done_spec(self) -> None:
        """Flanks every ``done`` with ``terminated`` and vice versa, at every level."""
        done = self.output_spec["full_done_spec"]
        was_locked = done.is_locked
        if was_locked:
            self._unlock_specs()
        try:
            for level in _keys.done_levels(done, self.batch_size):
                names = {_keys.as_tuple(k)[-1] for k in level.keys}
                template = done[level.keys[0]]
                for name in ("done", "terminated"):
                    if name not in names:
                        done[level.key(name)] = template.clone()
        finally:
            if was_locked:
                self._lock_specs()
        self._cache.clear()

    def _lock_specs(self) -> None:
        self._input_spec.lock_()
        self._output_spec.lock_()
        self.__dict__["_locked_now"] = True

    def _unlock_specs(self) -> None:
        self._input_spec.unlock_()
        self._output_spec.unlock_()
        self.__dict__["_locked_now"] = False

    # ------------------------------------------------------------------ basic attributes
    @property
    def batch_size(self) -> torch.Size:
        """The batch dims of the env."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value) -> None:
        value = _as_size(value)
        self.__dict__["_batch_size"] = value
        self._with_unlocked(lambda: self._reshape_specs(value))

    def _reshape_specs(self, value: torch.Size) -> None:
        for spec in (self._input_spec, self._output_spec):
            spec.shape = value

    @property
    def device(self) -> torch.device:
        """The device of the env's data."""
        return self._device

    @device.setter
    def device(self, value) -> None:
        self.__dict__["_device"] = torch.device(value)

    @property
    def is_closed(self) -> bool:
        return self._closed

    # ------------------------------------------------------------------ specs
    @property
    def input_spec(self) -> Composite:
        """``Composite(full_action_spec=..., full_state_spec=...)``, locked."""
        return self._input_spec

    @input_spec.setter
    def input_spec(self, value: Composite) -> None:
        def set_():
            self.__dict__["_input_spec"] = value
        self._with_unlocked(set_)

    @property
    def output_spec(self) -> Composite:
        """``Composite(full_observation_spec=..., full_reward_spec=..., full_done_spec=...)``."""
        return self._output_spec

    @output_spec.setter
    def output_spec(self, value: Composite) -> None:
        def set_():
            self.__dict__["_output_spec"] = value
        self._with_unlocked(set_)

    def _with_unlocked(self, fn: Callable[[], None]) -> None:
        relock = self._locked_now
        if relock:
            self._unlock_specs()
        try:
            fn()
        finally:
            self._cache.clear()
            if relock:
                self._complete_done_spec()
                self._lock_specs()

    def _set_full(self, name: str, value: Composite | None) -> None:
        B = self.batch_size
        if value is None:
            value = Composite(shape=B, device=self.device)
        if not isinstance(value, Composite):
            raise TypeError(f"{name} must be a Composite, got {type(value).__name__}")
        if tuple(value.shape) != tuple(B):
            if tuple(value.shape[: len(B)]) != tuple(B) and len(value.shape) != 0:
                raise ValueError(
                    f"{name} has shape {list(value.shape)}, which does not start with the env "
                    f"batch_size {list(B)}"
                )
            value = value.clone()
            value.shape = B
        parent = getattr(self, "_" + _SPEC_NAMES[name])

        def set_():
            parent[name] = value
        self._with_unlocked(set_)

    def _wrap_leaf(self, name: str, default_key: str, value) -> Composite:
        if isinstance(value, Composite):
            return value
        if not isinstance(value, TensorSpec):
            raise TypeError(f"{name} must be a TensorSpec or Composite, got {type(value).__name__}")
        B = self.batch_size
        if tuple(value.shape[: len(B)]) != tuple(B):
            raise ValueError(
                f"{name} has shape {list(value.shape)}, which does not start with the env "
                f"batch_size {list(B)}"
            )
        current = getattr(self, "full_" + name, None)
        key = default_key
        if current is not None:
            keys = _keys.leaf_keys(current)
            if len(keys) == 1:
                key = keys[0]
        return Composite({key: value}, shape=B, device=value.device)

    def _leaf_or_composite(self, full: Composite) -> TensorSpec | Composite:
        keys = _keys.leaf_keys(full)
        if len(keys) == 1:
            return full[keys[0]]
        return full

    full_action_spec = property(
        lambda self: self._input_spec["full_action_spec"],
        lambda self, v: self._set_full("full_action_spec", v),
        doc="Composite of every action entry.",
    )
    full_state_spec = property(
        lambda self: self._input_spec["full_state_spec"],
        lambda self, v: self._set_full("full_state_spec", v),
        doc="Composite of the non-action inputs (state) of the env.",
    )
    full_observation_spec = property(
        lambda self: self._output_spec["full_observation_spec"],
        lambda self, v: self._set_full("full_observation_spec", v),
        doc="Composite of every observation entry.",
    )
    full_reward_spec = property(
        lambda self: self._output_spec["full_reward_spec"],
        lambda self, v: self._set_full("full_reward_spec", v),
        doc="Composite of every reward entry.",
    )
    full_done_spec = property(
        lambda self: self._output_spec["full_done_spec"],
        lambda self, v: self._set_full("full_done_spec", v),
        doc="Composite of every done/terminated/truncated entry.",
    )

    @property
    def action_spec(self) -> TensorSpec | Composite:
        """The action leaf spec when there is a single action key, else ``full_action_spec``."""
        return self._leaf_or_composite(self.full_action_spec)

    @action_spec.setter
    def action_spec(self, value) -> None:
        self.full_action_spec = self._wrap_leaf("action_spec", "action", value)

    @property
    def reward_spec(self) -> TensorSpec | Composite:
        """The reward leaf spec when there is a single reward key, else ``full_reward_spec``."""
        return self._leaf_or_composite(self.full_reward_spec)

    @reward_spec.setter
    def reward_spec(self, value) -> None:
        self.full_reward_spec = self._wrap_leaf("reward_spec", "reward", value)

    @property
    def done_spec(self) -> TensorSpec | Composite:
        """The done leaf spec when there is a single done key, else ``full_done_spec``."""
        return self._leaf_or_composite(self.full_done_spec)

    @done_spec.setter
    def done_spec(self, value) -> None:
        self.full_done_spec = self._wrap_leaf("done_spec", "done", value)

    @property
    def observation_spec(self) -> Composite:
        """Composite of every observation entry."""
        return self.full_observation_spec

    @observation_spec.setter
    def observation_spec(self, value) -> None:
        if not isinstance(value, Composite):
            raise TypeError(f"observation_spec must be a Composite, got {type(value).__name__}")
        self.full_observation_spec = value

    @property
    def state_spec(self) -> Composite:
        """Composite of the state entries (inputs other than actions)."""
        return self.full_state_spec

    @state_spec.setter
    def state_spec(self, value) -> None:
        if value is not None and not isinstance(value, Composite):
            raise TypeError(f"state_spec must be a Composite, got {type(value).__name__}")
        self.full_state_spec = value

    # ------------------------------------------------------------------ key plans (cached)
    def _cached(self, name: str, fn: Callable[[], Any]) -> Any:
        cache = self._cache
        if name not in cache:
            cache[name] = fn()
        return cache[name]

    @_cached_plan
    def action_keys(self) -> list[NestedKey]:
        return _keys.leaf_keys(self.full_action_spec)

    @_cached_plan
    def reward_keys(self) -> list[NestedKey]:
        return _keys.leaf_keys(self.full_reward_spec)

    @_cached_plan
    def done_keys(self) -> list[NestedKey]:
        return _keys.leaf_keys(self.full_done_spec)

    @_cached_plan
    def state_keys(self) -> list[NestedKey]:
        return _keys.leaf_keys(self.full_state_spec)

    @_cached_plan
    def observation_keys(self) -> list[NestedKey]:
        return _keys.leaf_keys(self.full_observation_spec)

    @_cached_plan
    def episode(self) -> EpisodePlan:
        """The env's episode plan (done levels, reset rules, merge), built once from the locked
        specs; see :mod:`gpusim.envs.episode`."""
        return EpisodePlan(self.full_done_spec, self.batch_size)

    @property
    def done_levels(self) -> list[DoneLevel]:
        """The done levels (root first), each with its keys, reset key and batch shape."""
        return self.episode.levels

    @property
    def done_keys_groups(self) -> list[list[NestedKey]]:
        return [list(level.keys) for level in self.done_levels]

    @_cached_plan
    def reset_keys(self) -> list[NestedKey]:
        """One ``"_reset"`` key per done level."""
        return [level.reset_key for level in self.done_levels]

    def _single(self, keys: list, what: str) -> NestedKey:
        if len(keys) == 1:
            return keys[0]
        raise KeyError(f"{what} is ambiguous: the env has {len(keys)} {what}s {keys}; use {what}s instead")

    @property
    def action_key(self) -> NestedKey:
        return self._single(self.action_keys, "action_key")

    @property
    def reward_key(self) -> NestedKey:
        return self._single(self.reward_keys, "reward_key")

    @property
    def done_key(self) -> NestedKey:
        return self._single([k for k in self.done_keys if _keys.as_tuple(k)[-1] == "done"], "done_key")

    @_cached_plan
    def _step_mdp_plan(self) -> StepMDPPlan:
        return StepMDPPlan(action_keys=self.action_keys, reward_keys=self.reward_keys, done_keys=self.done_keys)

    @_cached_plan
    def _echo_state_keys(self) -> list[NestedKey]:
        """State keys that ``step`` copies into ``"next"`` when ``_step`` does not produce them."""
        observation_keys = set(self.observation_keys)
        return [k for k in self.state_keys if k not in observation_keys]

    def empty_cache(self) -> None:
        """Drops the cached key plans (they are rebuilt on next use)."""
        self._cache.clear()

    # ------------------------------------------------------------------ abstract API
    @abc.abstractmethod
    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        """Returns a new tensordict with the reset data (all rows, or the ``"_reset"`` rows)."""

    @abc.abstractmethod
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns a new tensordict with the next observation, reward and done entries."""

    @abc.abstractmethod
    def _set_seed(self, seed: int | None) -> None:
        """Seeds the env's random number generators."""

    # ------------------------------------------------------------------ done handling
    def _complete_done(self, data: TensorDictBase) -> TensorDictBase:
        """Fills the missing ``done``/``terminated`` of every level (``terminated := done``,
        ``done := terminated | truncated``)."""
        for level in self.done_levels:
            node = data if level.prefix == () else data.get(level.prefix, None)
            if node is None:
                continue
            done = fast_get(node, "done")
            terminated = fast_get(node, "terminated")
            if done is not None and terminated is not None:
                continue
            if done is None and terminated is None:
                raise KeyError(
                    f"the env output has neither 'done' nor 'terminated' at level {level.prefix or 'root'}"
                )
            if terminated is None:
                fast_set(node, "terminated", done)
            else:
                truncated = fast_get(node, "truncated")
                fast_set(node, "done", terminated if truncated is None else terminated | truncated)
        return data

    def _check_batch(self, tensordict: TensorDictBase) -> None:
        if self.batch_locked and tensordict.batch_size != self.batch_size:
            raise ValueError(
                f"Expected a tensordict with batch_size {list(self.batch_size)} (the env's), got "
                f"batch_size {list(tensordict.batch_size)}"
            )

    # ------------------------------------------------------------------ reset / step
    def reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        """Resets the env (all rows, or the rows selected by ``"_reset"`` entries).

        The ``"_reset"`` entries are resolved once (:meth:`EpisodePlan.resolve
        <gpusim.envs.episode.EpisodePlan.resolve>`: bool, the level's done shape, a root entry
        prevails). With an input tensordict, the rows not reset keep the input's data, the
        ``"_reset"`` entries are erased, and the input is updated with the result and returned.

        Raises:
            TypeError, ValueError: a ``"_reset"`` entry that is not bool or not of its level's
                done shape (naming the key, expected and received dtype/shape).
        """
        if tensordict is not None:
            self._check_batch(tensordict)
        episode = self.episode
        masks = episode.resolve(tensordict, self._sparse_now())
        return self._reset_and_merge(tensordict, masks, **kwargs)

    def _reset_and_merge(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs) -> TensorDictBase:
        tensordict_reset = self._reset_rows(tensordict, masks, **kwargs)
        if self.run_type_checks:
            self._type_check(tensordict_reset, reset=True)
        if tensordict is None:
            return tensordict_reset
        return self.episode.merge(tensordict_reset, tensordict, masks)

    def _reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs) -> TensorDictBase:
        """Hook: the reset data for the rows of ``masks`` (a new tensordict; the rows not reset
        may hold anything finite, they are merged with the previous data afterwards).

        Default: ``_reset`` (which may read the ``"_reset"`` entries of ``tensordict``) plus done
        completion. Wrappers and batched envs override this to reset rows their own way; they
        read ``masks`` (:class:`~gpusim.envs.episode.ResetMasks`), never re-derive it.
        """
        tensordict_reset = self._reset(tensordict, **kwargs)
        if tensordict_reset is tensordict:
            raise RuntimeError(f"{type(self).__name__}._reset must return a new tensordict, not its input")
        return self._complete_done(tensordict_reset)

    def _step_output(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The complete ``"next"`` data of a step: ``_step`` plus done completion and state echo
        (for containers that step an inner env: ``TransformedEnv``, frame skip, batched workers)."""
        next_td = self._step(tensordict)
        self._complete_done(next_td)
        for key in self._echo_state_keys:
            if isinstance(key, str):
                if fast_get(next_td, key) is None:
                    value = fast_get(tensordict, key)
                    if value is not None:
                        fast_set(next_td, key, value)
            elif key not in next_td.keys(True):
                value = tensordict.get(key, None)
                if value is not None:
                    next_td.set(key, value)
        if self.run_type_checks:
            self._type_check(next_td)
        return next_td

    def step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Runs one step: writes the ``_step`` output under ``"next"`` of the input and returns it.

        The action leaves are checked against the action spec (shape and dtype, no device sync);
        a missing state entry means the env was not reset.

        Raises:
            KeyError: a missing action entry, or a missing state entry (call ``reset()`` first).
            ValueError, TypeError: an action of the wrong shape or dtype (naming the key, the
                expected and the received value).
        """
        self._check_batch(tensordict)
        self._check_inputs(tensordict)
        return fast_set(tensordict, "next", self._step_output(tensordict))

    @_cached_plan
    def _input_checks(self) -> tuple[list, list]:
        """``[(key, shape, dtype)]`` of the action leaves and ``[key]`` of the state leaves."""
        spec = self.full_action_spec
        actions = [(k, spec[k].shape, spec[k].dtype) for k in self.action_keys]
        states = [k for k in self.state_keys if k not in set(self.action_keys)]
        return actions, states

    def _check_inputs(self, tensordict: TensorDictBase) -> None:
        actions, states = self._input_checks
        name = type(self).__name__
        for key, shape, dtype in actions:
            value = fast_get(tensordict, key) if isinstance(key, str) else tensordict.get(key, None)
            if value is None:
                raise KeyError(
                    f"{name}.step: the input has no action entry {_keys.fmt(key)} (expected shape {list(shape)}, "
                    f"dtype {dtype}); write one first, e.g. env.rand_action(td) or a policy"
                )
            if value.shape != shape:
                raise ValueError(
                    f"{name}.step: the action {_keys.fmt(key)} has shape {list(value.shape)}, expected {list(shape)} "
                    "(the action spec's shape)"
                )
            if value.dtype != dtype:
                raise TypeError(
                    f"{name}.step: the action {_keys.fmt(key)} has dtype {value.dtype}, expected {dtype} "
                    "(the action spec's dtype)"
                )
        for key in states:
            value = fast_get(tensordict, key) if isinstance(key, str) else tensordict.get(key, None)
            if value is None:
                raise KeyError(
                    f"{name}.step: the input has no state entry {_keys.fmt(key)}: call env.reset() first and step "
                    "from its output (or pass the state of a previous step)"
                )
        if self.run_type_checks:
            self._check_action_values(tensordict)

    def _check_action_values(self, tensordict: TensorDictBase) -> None:
        """Debug mode: every action value inside its spec, and finite."""
        spec = self.full_action_spec
        for key in self.action_keys:
            value = tensordict.get(key)
            leaf = spec[key]
            if value.is_floating_point() and not bool(torch.isfinite(value).all()):
                raise ValueError(f"{type(self).__name__}.step: the action {_keys.fmt(key)} holds non-finite values")
            if not leaf.is_in(value):
                raise ValueError(
                    f"{type(self).__name__}.step: the action {_keys.fmt(key)} is outside its spec "
                    f"{type(leaf).__name__}: {value.flatten()[:8].tolist()}"
                )

    def _type_check(self, data: TensorDictBase, reset: bool = False) -> None:
        """Debug mode: every output leaf present, finite and inside its spec."""
        keys = [*self.observation_keys, *self.done_keys]
        if not reset:
            keys += self.reward_keys
        where = "reset" if reset else "step"
        for key in keys:
            value = data.get(key, None)
            if value is None:
                raise KeyError(f"{type(self).__name__}: the {where} output misses the key {_keys.fmt(key)}")
            spec = self.output_spec[self._spec_parent(key)][key]
            if isinstance(value, torch.Tensor) and value.is_floating_point() and not bool(torch.isfinite(value).all()):
                raise ValueError(f"{type(self).__name__}: the {where} output {_keys.fmt(key)} holds non-finite values")
            if not spec.is_in(value):
                raise ValueError(f"{type(self).__name__}: the {where} output {_keys.fmt(key)} is outside its spec {spec}")

    def _spec_parent(self, key: NestedKey) -> str:
        if key in self.reward_keys:
            return "full_reward_spec"
        if key in self.done_keys:
            return "full_done_spec"
        return "full_observation_spec"

    def _step_mdp(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._step_mdp_plan(tensordict)

    def maybe_reset(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Resets the rows whose ``done`` (or ``truncated``) flag is set, in the env's
        :attr:`auto_reset_mode`: ``MASKED`` resets all rows through masks without reading flags on
        the host; ``SPARSE`` reads the done rows once and does no reset work when there are none.
        """
        episode = self.episode
        sparse = self._sparse_now()
        masks = episode.done_masks(tensordict, sparse)
        if sparse and not masks.any():
            return tensordict
        episode.write(tensordict, masks)
        return self._reset_and_merge(tensordict, masks)

    def step_and_maybe_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        """Steps, builds the next root with ``step_mdp`` and resets the done rows.

        Returns:
            ``(tensordict_with_next, next_root)``: the stepped input, and the input of the next
            step (reset where a done flag was set).
        """
        tensordict = self.step(tensordict)
        tensordict_ = self._step_mdp(tensordict)
        tensordict_ = self.maybe_reset(tensordict_)
        return tensordict, tensordict_

    # ------------------------------------------------------------------ seeding
    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds the env and returns the next seed (deterministic function of ``seed``)."""
        if seed is not None and not isinstance(seed, int):
            raise TypeError(f"seed must be an int or None, got {seed!r}")
        self._set_seed(seed)
        if seed is None or static_seed:
            return seed
        return next_seed(seed)

    # ------------------------------------------------------------------ random / fake data
    def _empty_td(self) -> TensorDict:
        return TensorDict({}, batch_size=self.batch_size, device=self.device)

    def rand_action(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Writes a random action (from ``full_action_spec``) into ``tensordict``."""
        if tensordict is None:
            tensordict = self._empty_td()
        tensordict.update(self.full_action_spec.rand())
        return tensordict

    def rand_step(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """A step with a random action (resets first when the env needs a state and none is given)."""
        if tensordict is None:
            tensordict = self.reset() if self.state_keys else self._empty_td()
        return self.step(self.rand_action(tensordict))

    def fake_tensordict(self) -> TensorDictBase:
        """A zero-filled tensordict with the structure of one step (root + ``"next"``)."""
        state = self.full_state_spec.zero()
        action = self.full_action_spec.zero()
        obs = self.full_observation_spec.zero()
        reward = self.full_reward_spec.zero()
        done = self.full_done_spec.zero()
        root = state.update(action).update(obs.clone()).update(done.clone())
        nxt = obs.update(reward).update(done)
        for key in self._echo_state_keys:
            nxt.set(key, state.get(key).clone())
        root.set("next", nxt)
        return root

    # ------------------------------------------------------------------ rollout
    def rollout(
        self,
        max_steps: int,
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        callback: Callable[["EnvBase", TensorDictBase], Any] | None = None,
        *,
        auto_reset: bool = True,
        auto_cast_to_device: bool = False,
        break_when_any_done: bool | None = None,
        break_when_all_done: bool | None = None,
        return_contiguous: bool = True,
        tensordict: TensorDictBase | None = None,
        set_truncated: bool = False,
        compile: bool | dict = False,
    ) -> TensorDictBase:
        """Runs ``max_steps`` steps with ``policy`` (random actions when ``None``).

        Args:
            max_steps: number of steps.
            policy: callable reading and writing a tensordict.
            callback: called as ``callback(env, tensordict)`` after each step.
            auto_reset: reset (``tensordict`` is passed to ``reset``) before the first step.
            auto_cast_to_device: move the policy output to the env device.
            break_when_any_done: stop after the step on which any env finished (default
                ``True`` unless ``break_when_all_done`` is set).
            break_when_all_done: stop once every env has finished at least once; envs that are
                done are reset in between (non-stop mode is used).
            return_contiguous: stack into a contiguous tensordict (else a lazy stack).
            tensordict: initial data (required when ``auto_reset=False``).
            set_truncated: mark the last step as truncated (requires a ``truncated`` entry).
            compile: run ``policy + step_and_maybe_reset`` through ``torch.compile(fullgraph=True)``
                (a dict is forwarded to :meth:`compile`); non-stop rollouts only
                (``break_when_any_done=False``), without callback or ``set_truncated``. The
                compiled function is cached on the env for this policy. To continue where a
                compiled rollout ended, pass ``auto_reset=False,
                tensordict=env.compile(policy).last_root()`` (same options as ``compile``): the
                episodes go on, nothing is recompiled.

        Returns:
            A tensordict of shape ``[*batch_size, T]`` whose last dim is named ``"time"``.
        """
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
        if break_when_any_done is None:
            break_when_any_done = not break_when_all_done
        if break_when_any_done and break_when_all_done:
            raise ValueError("break_when_any_done and break_when_all_done cannot both be True")
        if compile:
            bad = {
                "break_when_any_done=True": break_when_any_done,
                "break_when_all_done=True": bool(break_when_all_done),
                "callback": callback is not None,
                "set_truncated=True": set_truncated,
            }
            bad = [name for name, value in bad.items() if value]
            if bad:
                raise ValueError(
                    "rollout(compile=True) runs non-stop rollouts only (finished episodes are reset "
                    f"inside the compiled loop), so it cannot take {', '.join(bad)}: call "
                    f"env.rollout({max_steps}, policy, compile=True, break_when_any_done=False)"
                )
            runner = self.compile(policy, **(compile if isinstance(compile, dict) else {}))
            return runner(max_steps, tensordict=tensordict, auto_reset=auto_reset)
        if auto_reset:
            tensordict = self.reset(tensordict)
        elif tensordict is None:
            raise ValueError("rollout(auto_reset=False) needs an initial tensordict")
        if policy is None:
            policy = self.rand_action
        if set_truncated and not any(_keys.as_tuple(k)[-1] == "truncated" for k in self.done_keys):
            raise RuntimeError(
                "rollout(set_truncated=True) requires a 'truncated' entry in the done spec; "
                f"the env has done keys {self.done_keys}"
            )
        steps: list[TensorDictBase] = []
        seen_done = None
        for i in range(max_steps):
            tensordict = policy(tensordict)
            if auto_cast_to_device and tensordict.device != self.device:
                tensordict = tensordict.to(self.device)
            last = i == max_steps - 1
            if break_when_any_done:
                tensordict = self.step(tensordict)
                if set_truncated and last:
                    self._set_truncated(tensordict.get("next"))
                steps.append(tensordict)
                if callback is not None:
                    callback(self, tensordict)
                if last or bool(self.episode.ended(tensordict.get("next")).any()):
                    break
                tensordict = self._step_mdp(tensordict)
            else:
                if set_truncated and last:
                    tensordict = self.step(tensordict)
                    self._set_truncated(tensordict.get("next"))
                    steps.append(tensordict)
                    if callback is not None:
                        callback(self, tensordict)
                    break
                stepped, tensordict = self.step_and_maybe_reset(tensordict)
                steps.append(stepped)
                if callback is not None:
                    callback(self, stepped)
                if break_when_all_done:
                    done_now = self.episode.ended(stepped.get("next"))
                    seen_done = done_now if seen_done is None else seen_done | done_now
                    if bool(seen_done.all()):
                        break
        return self._stack_steps(steps, return_contiguous)

    def _stack_steps(self, steps: list[TensorDictBase], return_contiguous: bool) -> TensorDictBase:
        dim = len(self.batch_size)
        if return_contiguous:
            out = stack_steps(steps, dim)
        else:
            out = LazyStackedTensorDict.lazy_stack(steps, dim)
        try:
            out.names = [None] * dim + ["time"]
        except Exception:  # lazy stacks of heterogeneous data may not support names
            pass
        return out

    def _set_truncated(self, next_td: TensorDictBase) -> None:
        for level in self.done_levels:
            node = next_td if level.prefix == () else next_td.get(level.prefix)
            trunc = node.get("truncated", None)
            if trunc is None:
                continue
            node.set("truncated", torch.ones_like(trunc))
            node.set("done", torch.ones_like(node.get("done")))

    def compile(self, policy: Callable[[TensorDictBase], TensorDictBase] | None = None, **kwargs) -> "CompiledRollout":
        """A compiled ``policy + step_and_maybe_reset`` loop, cached per policy and options.

        The returned :class:`~gpusim.envs.compiled.CompiledRollout` is called as
        ``runner(max_steps)`` for a ``[*B, T]`` rollout, ``runner.run(max_steps, root)`` for
        ``(data, next_root)`` (continue by passing ``next_root`` back), or ``runner.step(td)``
        for one compiled step. Keyword arguments are those of ``CompiledRollout``
        (``steps_per_call``, ``mode``, ``verbose``, ``torch.compile`` options).

        Examples:
            >>> from gpusim import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[4], seed=0)
            >>> runner = env.compile(verbose=False)
            >>> env.compile(verbose=False) is runner
            True
        """
        from gpusim.envs.compiled import CompiledRollout

        cache = self.__dict__.setdefault("_compiled_rollouts", {})
        key = (id(policy), tuple(sorted(kwargs.items())))
        runner = cache.get(key)
        if runner is None or (policy is not None and runner.policy is not policy):
            runner = CompiledRollout(self, policy, **kwargs)
            cache[key] = runner
        return runner

    # ------------------------------------------------------------------ misc
    def to(self, *args, **kwargs) -> "EnvBase":
        """Moves the env (specs and buffers) to a device."""
        device = None
        if args and isinstance(args[0], (str, torch.device, int)):
            device = torch.device(args[0])
        elif "device" in kwargs:
            device = torch.device(kwargs["device"])
        super().to(*args, **kwargs)
        if device is not None and device != self.device:
            def move():
                self.__dict__["_input_spec"] = self._input_spec.to(device)
                self.__dict__["_output_spec"] = self._output_spec.to(device)
            self._with_unlocked(move)
            self.device = device
        return self

    def close(self) -> None:
        """Releases the env's resources."""
        self.__dict__["_closed"] = True

    def __iter__(self) -> Iterator[TensorDictBase]:
        raise TypeError(f"{type(self).__name__} is not iterable; use rollout()")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(\n    batch_size={list(self.batch_size)},\n    device={self.device},\n"
            f"    observation_keys={self.observation_keys},\n    action_keys={self.action_keys},\n"
            f"    reward_keys={self.reward_keys},\n    done_keys={self.done_keys})"
        )
