"""The spec side of :class:`~gpusim.envs.common.EnvBase`: batch size, device, the locked input and
output specs with their accessors, and :func:`_cached_plan`, the property of the plans derived
from them (:mod:`gpusim.envs.key_plans`): computed once from the locked specs and kept in
``env._cache`` until the specs change (every spec setter unlocks, sets, clears the cache and
relocks).

Attributes are stored in the instance ``__dict__`` directly where ``nn.Module`` would otherwise
intercept them: ``nn.Module.__setattr__`` is slow and files tensors and modules apart, and a
wrapper's ``__getattr__`` (``TransformedEnv``, batched envs) must not be reached for them.

Examples:
    >>> from gpusim.envs.native import CartPoleEnv
    >>> env = CartPoleEnv(batch_size=[2])
    >>> env.batch_size, env.full_action_spec["action"].shape, env.output_spec.is_locked
    (torch.Size([2]), torch.Size([2]), True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from gpusim.envs import _edits, _keys
from gpusim.specs import Composite, TensorSpec

if TYPE_CHECKING:
    from gpusim.envs.common import EnvBase

__all__ = ["EnvSpecs", "warm_plans"]

_SPEC_NAMES = {
    "full_action_spec": "input_spec",
    "full_state_spec": "input_spec",
    "full_observation_spec": "output_spec",
    "full_reward_spec": "output_spec",
    "full_done_spec": "output_spec",
}


def _cached_plan(fn: Callable[[Any], Any]) -> property:
    """A property computed once from the (locked) specs and kept in ``env._cache`` until the
    specs change. The hot path reads it with one dict lookup. Nothing is kept while the specs
    are unlocked (they may change in place) or for an env built with ``cache_specs=False``
    (its specs are recomputed at every read)."""
    name = fn.__name__

    def getter(self):
        cache = self._cache
        value = cache.get(name, _MISSING)
        if value is _MISSING:
            d = self.__dict__  # nn.Module slot (see the module docstring)
            if not d.get("_cache_specs", True):
                self.output_spec  # noqa: B018 (an uncached TransformedEnv recomputes its specs on read)
                value = fn(self)
            else:
                value = fn(self)
                if d.get("_locked_now", False):
                    cache[name] = value
        return value

    getter.__doc__ = fn.__doc__
    getter.__annotations__ = {"return": fn.__annotations__.get("return", Any)}
    getter._gpusim_plan = True  # type: ignore[attr-defined]  (see warm_plans)
    return property(getter)


def warm_plans(env: torch.nn.Module) -> None:
    """Computes every :func:`_cached_plan` of ``env`` and of the envs and transforms it holds, so
    that ``env._cache`` is full before ``torch.compile`` traces a step.

    A plan first read while tracing is stored in the cache as a side effect of the traced call:
    the guards of that graph then hold the smaller cache, fail on the next call, and the same
    graph is traced and compiled a second time (measured: +3 s per runner with a warm Inductor
    cache). A plan that cannot be computed for this env is left for the step to raise.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> env = CartPoleEnv(batch_size=[2])
        >>> "_input_checks" in env._cache
        False
        >>> warm_plans(env)
        >>> "_input_checks" in env._cache
        True
    """
    for module in _env_tree(env):
        if "_cache" not in vars(module):  # not an env with plans
            continue
        for name in _plan_names(type(module)):
            try:
                getattr(module, name)
            except Exception:  # noqa: BLE001, S112 - a plan this env does not have: its step raises if it reads it
                continue


def _env_tree(env: torch.nn.Module) -> list[torch.nn.Module]:
    """``env`` and every module under it: its submodules, and the modules kept in an instance
    ``__dict__`` directly (a ``TransformedEnv``'s base env, see the module docstring)."""
    seen: dict[int, torch.nn.Module] = {}
    stack = [env]
    while stack:
        module = stack.pop()
        if id(module) in seen:
            continue
        seen[id(module)] = module
        stack.extend(module.children())
        stack.extend(v for v in vars(module).values() if isinstance(v, torch.nn.Module))
    return list(seen.values())


def _plan_names(cls: type) -> list[str]:
    """Names of the :func:`_cached_plan` properties of ``cls``, overrides included (a subclass
    that computes a plan its own way, e.g. ``TransformedEnv._input_checks``, still keeps it in
    ``env._cache``)."""
    names = set()
    for klass in cls.__mro__:
        for name, attr in vars(klass).items():
            if isinstance(attr, property) and getattr(attr.fget, "_gpusim_plan", False):
                names.add(name)
    return sorted(names)


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


class EnvSpecs:
    """Mixin of :class:`~gpusim.envs.common.EnvBase`: specs and batch attributes.

    It reads the instance slots ``_input_spec``, ``_output_spec``, ``_batch_size``, ``_device``,
    ``_closed``, ``_cache``, ``_locked_now`` and ``_spec_locked`` that ``EnvBase.__new__`` and
    ``__init__`` create.

    Examples:
        >>> from gpusim.envs.native import TicTacToeEnv
        >>> sorted(TicTacToeEnv().full_reward_spec.keys())
        ['player0', 'player1']
    """

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
        self.__dict__["_locked_now"] = True  # nn.Module slot (see the module docstring)

    def _unlock_specs(self) -> None:
        self._input_spec.unlock_()
        self._output_spec.unlock_()
        self.__dict__["_locked_now"] = False  # nn.Module slot (see the module docstring)

    def set_spec_lock_(self, mode: bool = True) -> EnvBase:
        """Locks (``mode=True``) or unlocks the env's input and output specs; returns the env.

        While locked, in-place changes to the specs raise (the spec property setters still work:
        they unlock, set and relock). Unlocking clears the cached key lists.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=(2,))
            >>> env.set_spec_lock_(False).is_spec_locked, env.output_spec.is_locked
            (False, False)
            >>> env.is_spec_locked = True
            >>> env.output_spec.is_locked
            True
        """
        mode = bool(mode)
        if mode:
            self._lock_specs()
        else:
            self._cache.clear()
            self._unlock_specs()
        self.__dict__["_spec_locked"] = mode  # nn.Module slot (see the module docstring)
        return self

    @property
    def is_spec_locked(self) -> bool:
        """Whether the env's specs are locked (settable: calls :meth:`set_spec_lock_`).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv(batch_size=(2,)).is_spec_locked
            True
        """
        return bool(self.__dict__.get("_locked_now", False))  # nn.Module slot (see the module docstring)

    @is_spec_locked.setter
    def is_spec_locked(self, value: bool) -> None:
        self.set_spec_lock_(value)

    # ------------------------------------------------------------------ basic attributes
    @property
    def batch_size(self) -> torch.Size:
        """The batch dims of the env (every spec and every tensordict of the env starts with them).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2, 3])
            >>> env.batch_size, env.reset().batch_size
            (torch.Size([2, 3]), torch.Size([2, 3]))
        """
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value) -> None:
        value = _as_size(value)
        self.__dict__["_batch_size"] = value  # nn.Module slot (see the module docstring)
        self._with_unlocked(lambda: self._reshape_specs(value))

    def _reshape_specs(self, value: torch.Size) -> None:
        for spec in (self._input_spec, self._output_spec):
            spec.shape = value

    @property
    def device(self) -> torch.device:
        """The device of the env's data.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv().device
            device(type='cpu')
        """
        return self._device

    @device.setter
    def device(self, value) -> None:
        self.__dict__["_device"] = torch.device(value)  # nn.Module slot (see the module docstring)

    @property
    def is_closed(self) -> bool:
        """Whether :meth:`close` was called (settable, as TorchRL envs assign it).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv()
            >>> env.is_closed
            False
            >>> env.close()
            >>> env.is_closed
            True
        """
        return self._closed

    @is_closed.setter
    def is_closed(self, value: bool) -> None:
        self.__dict__["_closed"] = bool(value)  # nn.Module slot (see the module docstring)

    @property
    def shape(self) -> torch.Size:
        """The env's batch size (an alias of :attr:`batch_size`).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2, 3])
            >>> env.shape
            torch.Size([2, 3])
        """
        return self.batch_size

    @property
    def batch_dims(self) -> int:
        """The number of batch dims of the env.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2, 3])
            >>> env.batch_dims
            2
        """
        return len(self.batch_size)

    def ndimension(self) -> int:
        """The number of batch dims of the env (a method, as :meth:`torch.Tensor.ndimension`).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2, 3])
            >>> env.ndimension()
            2
        """
        return len(self.batch_size)

    @property
    def ndim(self) -> int:
        """The number of batch dims of the env.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2, 3])
            >>> env.ndim, CartPoleEnv().ndim
            (2, 0)
        """
        return len(self.batch_size)

    def numel(self) -> int:
        """The number of envs in the batch (product of the batch dims; 1 for a single env).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2, 3])
            >>> env.numel(), CartPoleEnv().numel()
            (6, 1)
        """
        return self.batch_size.numel()

    # ------------------------------------------------------------------ specs
    @property
    def input_spec(self) -> Composite:
        """``Composite(full_action_spec=..., full_state_spec=...)``, locked.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> spec = CartPoleEnv(batch_size=[2]).input_spec
            >>> sorted(spec.keys()), spec.shape, spec.is_locked
            (['full_action_spec', 'full_state_spec'], torch.Size([2]), True)
        """
        return self._input_spec

    @input_spec.setter
    def input_spec(self, value: Composite) -> None:
        def set_():
            self.__dict__["_input_spec"] = value  # nn.Module slot (see the module docstring)

        self._with_unlocked(set_)

    @property
    def output_spec(self) -> Composite:
        """``Composite(full_observation_spec=..., full_reward_spec=..., full_done_spec=...)``, locked.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> spec = CartPoleEnv(batch_size=[2]).output_spec
            >>> sorted(spec.keys())
            ['full_done_spec', 'full_observation_spec', 'full_reward_spec']
        """
        return self._output_spec

    @output_spec.setter
    def output_spec(self, value: Composite) -> None:
        def set_():
            self.__dict__["_output_spec"] = value  # nn.Module slot (see the module docstring)

        self._with_unlocked(set_)

    def _with_unlocked(self, fn: Callable[[], None]) -> None:
        relock = self._locked_now
        if relock:
            self._unlock_specs()
        try:
            fn()
        finally:
            self._cache.clear()
            _edits.edited()
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
                    f"{name} has shape {list(value.shape)}, which does not start with the env batch_size {list(B)}"
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
                f"{name} has shape {list(value.shape)}, which does not start with the env batch_size {list(B)}"
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
        doc="""Composite of every action entry (shape: the env's batch size).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> spec = CartPoleEnv(batch_size=[2]).full_action_spec
            >>> list(spec.keys()), spec["action"].shape, spec["action"].n
            (['action'], torch.Size([2]), 2)
        """,
    )

    full_state_spec = property(
        lambda self: self._input_spec["full_state_spec"],
        lambda self, v: self._set_full("full_state_spec", v),
        doc="""Composite of the non-action inputs (state) of the env.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> spec = CartPoleEnv(batch_size=[2]).full_state_spec  # the physics travel in the data
            >>> list(spec.keys()), spec["state"].shape
            (['state'], torch.Size([2, 4]))
        """,
    )

    full_observation_spec = property(
        lambda self: self._output_spec["full_observation_spec"],
        lambda self, v: self._set_full("full_observation_spec", v),
        doc="""Composite of every observation entry.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> spec = PendulumEnv(batch_size=[2]).full_observation_spec
            >>> list(spec.keys()), spec["observation"].shape
            (['observation'], torch.Size([2, 3]))
        """,
    )

    full_reward_spec = property(
        lambda self: self._output_spec["full_reward_spec"],
        lambda self, v: self._set_full("full_reward_spec", v),
        doc="""Composite of every reward entry.

        Examples:
            >>> from gpusim.envs.native import TicTacToeEnv
            >>> sorted(TicTacToeEnv().full_reward_spec.keys(True, True))  # one reward per player
            [('player0', 'reward'), ('player1', 'reward')]
        """,
    )

    full_done_spec = property(
        lambda self: self._output_spec["full_done_spec"],
        lambda self, v: self._set_full("full_done_spec", v),
        doc="""Composite of every done/terminated/truncated entry (each done level has both
        ``done`` and ``terminated``: the base class adds the missing one).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> spec = CartPoleEnv(batch_size=[2]).full_done_spec
            >>> sorted(spec.keys()), spec["done"].shape, spec["done"].dtype
            (['done', 'terminated'], torch.Size([2, 1]), torch.bool)
        """,
    )

    @property
    def action_spec(self) -> TensorSpec | Composite:
        """The action leaf spec when there is a single action key, else ``full_action_spec``.

        Setting a leaf spec stores it under the current single action key (``"action"`` by
        default), so an env author writes ``self.action_spec = Categorical(2, shape=B)``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> spec = CartPoleEnv(batch_size=[2]).action_spec
            >>> type(spec).__name__, spec.n, spec.shape
            ('Categorical', 2, torch.Size([2]))
        """
        return self._leaf_or_composite(self.full_action_spec)

    @action_spec.setter
    def action_spec(self, value) -> None:
        self.full_action_spec = self._wrap_leaf("action_spec", "action", value)

    @property
    def reward_spec(self) -> TensorSpec | Composite:
        """The reward leaf spec when there is a single reward key, else ``full_reward_spec``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv, TicTacToeEnv
            >>> CartPoleEnv(batch_size=[2]).reward_spec.shape
            torch.Size([2, 1])
            >>> type(TicTacToeEnv().reward_spec).__name__  # two reward keys
            'Composite'
        """
        return self._leaf_or_composite(self.full_reward_spec)

    @reward_spec.setter
    def reward_spec(self, value) -> None:
        self.full_reward_spec = self._wrap_leaf("reward_spec", "reward", value)

    @property
    def done_spec(self) -> TensorSpec | Composite:
        """The done leaf spec when there is a single done key, else ``full_done_spec``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> sorted(CartPoleEnv().done_spec.keys())  # done and terminated
            ['done', 'terminated']
        """
        return self._leaf_or_composite(self.full_done_spec)

    @done_spec.setter
    def done_spec(self, value) -> None:
        # a leaf done spec at the root makes both "done" and "terminated" entries, as in TorchRL
        full = self._wrap_leaf("done_spec", "done", value)
        if not isinstance(value, Composite) and list(full.keys()) == ["done"]:
            full["terminated"] = full["done"].clone()
        self.full_done_spec = full

    @property
    def observation_spec(self) -> Composite:
        """Composite of every observation entry (``full_observation_spec``).

        Raises:
            TypeError: (setter) a value that is not a ``Composite``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv(batch_size=[2]).observation_spec["observation"].shape
            torch.Size([2, 4])
        """
        return self.full_observation_spec

    @observation_spec.setter
    def observation_spec(self, value) -> None:
        if isinstance(value, TensorSpec):  # a leaf spec is the entry "observation"
            if tuple(value.shape[: len(self.batch_size)]) != tuple(self.batch_size):
                raise ValueError(
                    f"observation_spec has shape {list(value.shape)}, which does not start with the env "
                    f"batch_size {list(self.batch_size)}"
                )
            value = Composite(observation=value, shape=self.batch_size, device=value.device)
        if not isinstance(value, Composite):
            raise TypeError(f"observation_spec must be a Composite or a TensorSpec, got {type(value).__name__}")
        self.full_observation_spec = value

    @property
    def state_spec(self) -> Composite:
        """Composite of the state entries (inputs other than actions; ``full_state_spec``).

        Raises:
            TypeError: (setter) a value that is neither a ``Composite`` nor ``None``.

        Examples:
            >>> from gpusim.envs.native import TicTacToeEnv
            >>> sorted(TicTacToeEnv().state_spec.keys())
            ['board', 'mask', 'turn']
        """
        return self.full_state_spec

    @state_spec.setter
    def state_spec(self, value) -> None:
        if value is not None and not isinstance(value, Composite):
            raise TypeError(f"state_spec must be a Composite, got {type(value).__name__}")
        self.full_state_spec = value

    @property
    def specs(self) -> Composite:
        """``Composite(output_spec=..., input_spec=...)`` of the env's batch: every spec in one
        container (kept when the env is deleted).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> specs = CartPoleEnv(batch_size=[4]).specs
            >>> list(specs.keys())
            ['output_spec', 'input_spec']
            >>> specs["output_spec", "full_observation_spec", "observation"].shape
            torch.Size([4, 4])
        """
        return Composite(output_spec=self.output_spec, input_spec=self.input_spec, shape=self.batch_size)

    def _unbatch(self, spec: TensorSpec | Composite) -> TensorSpec | Composite:
        """``spec`` indexed at row 0 of every batch dim (the spec of one env of the batch)."""
        if not self.batch_size:
            return spec
        return spec[(0,) * len(self.batch_size)]

    def _batch(self, name: str, spec: TensorSpec | Composite) -> TensorSpec | Composite:
        """``spec`` (of one env) expanded to the env's batch size."""
        if not isinstance(spec, (TensorSpec, Composite)):
            raise TypeError(f"{name} must be a TensorSpec or Composite, got {type(spec).__name__}")
        return spec.expand(*self.batch_size, *spec.shape)


def _unbatched_property(name: str) -> property:
    """``env.<name>_unbatched``: the spec ``name`` of one env of the batch; setting it expands
    the given spec to the env's batch size and sets ``name``."""

    def getter(self: EnvBase):
        return self._unbatch(getattr(self, name))

    def setter(self: EnvBase, spec) -> None:
        setattr(self, name, self._batch(f"{name}_unbatched", spec))

    doc = f"""``{name}`` without the batch dims (the spec of one env); settable: a spec of one env
        is expanded to the env's batch size.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[4])
            >>> env.{name}_unbatched.shape == env.{name}.shape[1:]
            True
            >>> env.{name}_unbatched = env.{name}_unbatched  # expanded back to [4, ...]
            >>> env.{name}.shape[:1]
            torch.Size([4])
        """
    return property(getter, setter, doc=doc)


for _name in (
    "input_spec",
    "output_spec",
    "full_action_spec",
    "full_state_spec",
    "full_observation_spec",
    "full_reward_spec",
    "full_done_spec",
    "action_spec",
    "state_spec",
    "observation_spec",
    "reward_spec",
    "done_spec",
):
    setattr(EnvSpecs, f"{_name}_unbatched", _unbatched_property(_name))
del _name
