"""``TransformedEnv``: an environment made of a base env and a chain of transforms.

The transformed env is an :class:`~gpusim.envs.common.EnvBase`: its specs are the transform
chain applied to (clones of) the base env's specs, computed once and locked, recomputed
whenever the chain changes (``append_transform``, ``insert_transform``, ``Compose.append``).
A step runs the inverse transforms (reverse order) on a shallow copy of the input, steps the base
env, then runs the forward transforms on the ``"next"`` data; a reset resets the base env and
runs the transforms' ``_reset`` hooks, which see the input's ``"_reset"`` masks.

Attributes the transformed env does not have are looked up on the base env (``env.gravity``).

Examples:
    >>> from gpusim.envs.native import PendulumEnv
    >>> from gpusim.transforms import TransformedEnv, StepCounter
    >>> env = TransformedEnv(PendulumEnv(batch_size=[2], seed=0), StepCounter(max_steps=3))
    >>> td = env.rollout(5, break_when_any_done=False)
    >>> td["next", "step_count"][0].squeeze(-1)
    tensor([1, 2, 3, 1, 2])
    >>> env.max_torque  # looked up on the base env
    2.0
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import ContextDecorator
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from gpusim.envs import _partial
from gpusim.envs.common import TRANSFORM_HOOKS, EnvBase
from gpusim.envs.episode import AutoResetMode, ResetMasks
from gpusim.specs import Composite
from gpusim.transforms._levels import tget, tset
from gpusim.transforms.compose import Compose, _CallableTransform
from gpusim.transforms.transform import Transform

__all__ = ["TransformedEnv", "auto_unwrap_transformed_env", "set_auto_unwrap_transformed_env"]

#: The environment variable holding the process-wide auto-unwrap setting (read by worker
#: processes too, which inherit it).
AUTO_UNWRAP_VAR = "AUTO_UNWRAP_TRANSFORMED_ENV"


def _parse_flag(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "y", "on", "t"):
        return True
    if lowered in ("0", "false", "no", "n", "off", "f"):
        return False
    raise ValueError(f"{AUTO_UNWRAP_VAR} must be a boolean string such as 'True' or 'False', got {value!r}")


def auto_unwrap_transformed_env(allow_none: bool = False) -> bool | None:
    """Whether ``TransformedEnv(transformed_env, t)`` flattens the inner transformed env.

    The setting comes from :class:`set_auto_unwrap_transformed_env` or the
    ``AUTO_UNWRAP_TRANSFORMED_ENV`` environment variable; unset, it is ``True``.

    Args:
        allow_none: return ``None`` (instead of the default ``True``) when nothing was set.

    Examples:
        >>> auto_unwrap_transformed_env()
        True
        >>> with set_auto_unwrap_transformed_env(False):
        ...     auto_unwrap_transformed_env()
        False
    """
    value = os.environ.get(AUTO_UNWRAP_VAR)
    if value is None:
        return None if allow_none else True
    return _parse_flag(value)


class set_auto_unwrap_transformed_env(ContextDecorator):
    """Sets whether a ``TransformedEnv`` built on a ``TransformedEnv`` flattens it (the default
    of ``TransformedEnv(auto_unwrap=None)``): as a context manager, a decorator, or for the rest
    of the process with :meth:`set`.

    The setting is kept in the ``AUTO_UNWRAP_TRANSFORMED_ENV`` environment variable, so worker
    processes started while it is in force see it too.

    Args:
        mode: ``True``: build the new env on the inner env's base env with the inner transforms
            first; ``False``: keep the inner ``TransformedEnv`` as the base env.

    Examples:
        >>> from gpusim import CartPoleEnv, StepCounter
        >>> inner = TransformedEnv(CartPoleEnv(), StepCounter())
        >>> with set_auto_unwrap_transformed_env(False):
        ...     type(TransformedEnv(inner, StepCounter(step_count_key="n")).base_env).__name__
        'TransformedEnv'
        >>> type(TransformedEnv(inner, StepCounter(step_count_key="n")).base_env).__name__
        'CartPoleEnv'
    """

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_auto_unwrap_transformed_env(mode) needs a bool, got {mode!r}")
        self.mode = mode
        self._previous: list[str | None] = []

    def set(self) -> None:
        """Sets the mode for the rest of the process (and the workers it starts).

        Examples:
            >>> import os
            >>> from gpusim import CartPoleEnv, StepCounter
            >>> previous = os.environ.get("AUTO_UNWRAP_TRANSFORMED_ENV")
            >>> set_auto_unwrap_transformed_env(False).set()
            >>> inner = TransformedEnv(CartPoleEnv(), StepCounter())
            >>> type(TransformedEnv(inner, StepCounter(step_count_key="n")).base_env).__name__
            'TransformedEnv'
            >>> if previous is None:  # restore the process's setting
            ...     del os.environ["AUTO_UNWRAP_TRANSFORMED_ENV"]
            ... else:
            ...     os.environ["AUTO_UNWRAP_TRANSFORMED_ENV"] = previous
        """
        os.environ[AUTO_UNWRAP_VAR] = str(self.mode)

    def __enter__(self) -> set_auto_unwrap_transformed_env:
        self._previous.append(os.environ.get(AUTO_UNWRAP_VAR))
        self.set()
        return self

    def __exit__(self, *exc: Any) -> None:
        previous = self._previous.pop()
        if previous is None:
            os.environ.pop(AUTO_UNWRAP_VAR, None)
        else:
            os.environ[AUTO_UNWRAP_VAR] = previous


#: Attribute names never forwarded to the base env (avoids recursion during construction).
_NO_FALLTHROUGH = frozenset(
    {
        "_base_env",
        "base_env",
        "transform",
        "__setstate__",
        # torch.nn.Module's own slots: never the base env's (nn.Module reads them by attribute)
        "_modules",
        "_parameters",
        "_buffers",
        "_non_persistent_buffers_set",
        "_backward_pre_hooks",
        "_backward_hooks",
        "_forward_hooks",
        "_forward_hooks_with_kwargs",
        "_forward_hooks_always_called",
        "_forward_pre_hooks",
        "_forward_pre_hooks_with_kwargs",
        "_state_dict_hooks",
        "_state_dict_pre_hooks",
        "_load_state_dict_pre_hooks",
        "_load_state_dict_post_hooks",
        "_is_full_backward_hook",
    }
)


def _seen(td_in: TensorDictBase, tensordict: TensorDictBase) -> TensorDictBase:
    """The input the forward transforms see: the data the base env stepped from (TorchRL's
    ``tensordict_in``), unless a transform changed the batch size (they then work in the env's
    outer batch size, on ``tensordict``)."""
    return td_in if td_in.batch_size == tensordict.batch_size else tensordict


def _as_transform(transform: Any, where: str) -> Transform | None:
    """``transform`` itself, a callable wrapped as a transform, or ``None``; raises on others."""
    if transform is None or isinstance(transform, Transform):
        return transform
    if callable(transform):
        return _CallableTransform(transform)
    raise TypeError(f"{where}: expected a Transform or a callable on tensordicts, got {type(transform).__name__}")


def _needs_inverse(t: Transform) -> bool:
    """Whether ``t`` (or a member of a ``Compose``) does anything on the inverse path."""
    if isinstance(t, Compose):
        return any(_needs_inverse(c) for c in t.transforms)
    return t._has_inverse()


class TransformedEnv(EnvBase):
    """A transformed environment.

    Args:
        base_env: the base environment (an ``EnvBase``).
        transform: a transform, a ``Compose`` or a callable on tensordicts (``None``: an empty
            ``Compose``). ``env.transform`` is the object given (a single transform is not
            wrapped); ``append_transform``/``insert_transform`` turn it into a ``Compose``.
        cache_specs: keep the transformed specs until the chain changes (``False``: recompute
            them whenever ``input_spec``/``output_spec`` or a key list derived from them
            (``observation_keys``, ``done_keys``, ...) is read, to follow base-env or transform
            spec changes; each step then recomputes them too).
        auto_unwrap: when ``base_env`` is itself a plain ``TransformedEnv`` (not a subclass,
            and this env is not one either), build the new env on its base env with clones of
            its transforms followed by ``transform`` (one flat env). ``None`` (default): the
            global setting, :func:`auto_unwrap_transformed_env` (``True`` unless changed with
            :class:`set_auto_unwrap_transformed_env`).

    Raises:
        TypeError: ``env`` is not an ``EnvBase``, ``transform`` is not a ``Transform``, or an
            unknown keyword argument.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> from gpusim.transforms import Compose, RewardSum, StepCounter, TransformedEnv
        >>> env = TransformedEnv(CartPoleEnv(batch_size=[4], seed=0), Compose(StepCounter(500), RewardSum()))
        >>> env.observation_keys
        ['observation', 'step_count', 'episode_reward']
        >>> td = env.rollout(5)  # (random actions: no CartPole episode ends within 5 steps)
        >>> td.shape, td["next", "episode_reward"][:, -1].flatten().tolist()
        (torch.Size([4, 5]), [5.0, 5.0, 5.0, 5.0])

        Wrapping a transformed env flattens it (``auto_unwrap``):

        >>> from gpusim.transforms import InitTracker
        >>> outer = TransformedEnv(env, InitTracker())
        >>> type(outer.base_env).__name__, len(outer.transform)
        ('CartPoleEnv', 3)
    """

    def __init__(
        self,
        base_env: EnvBase,
        transform: Transform | Callable[[TensorDictBase], TensorDictBase] | None = None,
        cache_specs: bool = True,
        *,
        auto_unwrap: bool | None = None,
        device: torch.device | str | None = None,
        spec_locked: bool = True,
        run_type_checks: bool = False,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            raise TypeError(f"TransformedEnv got unexpected keyword arguments {sorted(kwargs)}")
        env = base_env
        if not isinstance(env, EnvBase):
            raise TypeError(f"TransformedEnv needs an EnvBase as base_env, got {type(env).__name__}")
        native_autoreset = env.native_autoreset  # inherited (read before any unwrapping)
        transform = _as_transform(transform, "TransformedEnv")
        if device is not None and torch.device(device) != env.device:
            env = env.to(device)
        inner: list[Transform] = []
        if auto_unwrap is None:
            auto_unwrap = auto_unwrap_transformed_env()
        if auto_unwrap and type(env) is TransformedEnv and type(self) is TransformedEnv:
            current = env.transform
            inner = [t.clone() for t in current] if type(current) is Compose else [current.clone()]
            env = env.base_env
        super().__init__(
            device=env.device, batch_size=env.batch_size, spec_locked=spec_locked, run_type_checks=run_type_checks
        )
        self.__dict__["_base_env"] = env
        self.__dict__["_cache_specs"] = cache_specs
        self.__dict__["_needs_inv"] = False
        self.__dict__["_inv_exports"] = []
        self.__dict__["_batch_locked"] = env.batch_locked
        if inner:
            more = [] if transform is None else (list(transform) if type(transform) is Compose else [transform])
            if type(transform) is Compose:
                for t in more:
                    t._detach_container()
            transform = Compose(*inner, *more)
        self._install_transform(transform)
        if native_autoreset:
            self.native_autoreset = True

    # ------------------------------------------------------------------ construction
    def _install_transform(self, transform: Transform | None) -> None:
        """Makes ``transform`` the env's transform (``None``: an empty ``Compose``); a single
        transform stays itself (``env.transform is t``), as in TorchRL."""
        if transform is None:
            transform = Compose()
        old = self.__dict__.get("_modules", {}).get("transform")
        if old is not None and old is not transform and old.__dict__["_container"] is self:
            old._detach_container()
        transform.set_container(self)
        self.add_module("transform", transform)
        transform.eval()  # transforms added to an env are in eval mode (TorchRL's behaviour)
        self._refresh()

    def _post_init(self) -> None:
        if self._spec_locked and not self._locked_now:
            self._lock_specs()

    def _refresh(self) -> None:
        """Recomputes the specs (and cached plans) from the base env and the chain."""
        base = self.base_env
        transform = self.transform
        transform.reset_parent()
        output_spec = base.output_spec.clone()
        output_spec.unlock_()
        input_spec = base.input_spec.clone()
        input_spec.unlock_()
        output_spec = transform.transform_output_spec(output_spec)
        input_spec = transform.transform_input_spec(input_spec)
        self.__dict__["_output_spec"] = output_spec
        self.__dict__["_input_spec"] = input_spec
        self.__dict__["_batch_size"] = torch.Size(transform.transform_env_batch_size(base.batch_size))
        device = transform.transform_env_device(base.device)
        self.__dict__["_device"] = None if device is None else torch.device(device)  # None: mixed devices
        self.__dict__["_needs_inv"] = _needs_inverse(transform)
        self.__dict__["_inv_exports"] = transform._inverse_exports()
        self.__dict__["_post_mdp_hook"] = bool(transform._has_post_step_mdp() or base._post_mdp_hook)
        self._cache.clear()
        if self._spec_locked:
            self._lock_specs()
        else:
            self.__dict__["_locked_now"] = False

    def _chain_changed(self) -> None:
        """Called by the ``Compose`` when transforms are added or removed."""
        self._refresh()

    # ------------------------------------------------------------------ attributes
    @property
    def base_env(self) -> EnvBase:
        """The environment the transforms are applied to.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import StepCounter
            >>> env = TransformedEnv(CartPoleEnv(), StepCounter())
            >>> type(env.base_env).__name__
            'CartPoleEnv'
        """
        return self.__dict__["_base_env"]

    @property
    def functional_step(self) -> bool:  # type: ignore[override]
        """The base env's (transforms keep their state in the tensordict or in statistics).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> TransformedEnv(CartPoleEnv()).functional_step  # the state lives in the tensordict
            True
        """
        return self.base_env.functional_step

    def _reset_on_native_autoreset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        """The base env's hook, then the transforms' (``Transform._reset_on_native_autoreset``),
        in reset order."""
        tensordict_reset = self.base_env._reset_on_native_autoreset(tensordict, tensordict_reset)
        return self.transform._reset_on_native_autoreset(tensordict, tensordict_reset)

    @property
    def _supports_set_state(self) -> bool:  # type: ignore[override]
        """The base env's (``reset(td, set_state=True)`` resets the base env to that state)."""
        return self.base_env._supports_set_state

    def _input_td_has_state(self, tensordict: TensorDictBase | None) -> bool:
        """The base env's detection (the state a ``set_state`` reset honours is the base env's)."""
        return self.base_env._input_td_has_state(tensordict)

    @property
    def auto_reset_mode(self) -> AutoResetMode:  # type: ignore[override]
        """The base env's auto-reset mode (the transforms follow it).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> TransformedEnv(CartPoleEnv(auto_reset_mode="masked")).auto_reset_mode.value
            'masked'
        """
        return self.base_env.auto_reset_mode

    @property
    def batch_size(self) -> torch.Size:
        """The batch size (the base env's unless a transform changes it).

        Setting it resizes the base env and recomputes the specs.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> TransformedEnv(CartPoleEnv(batch_size=[8])).batch_size
            torch.Size([8])
        """
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value) -> None:
        self.base_env.batch_size = value
        self._refresh()

    @property
    def device(self) -> torch.device:
        """The device (the base env's unless a transform changes it).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> TransformedEnv(CartPoleEnv(device="cpu")).device
            device(type='cpu')
        """
        return self._device

    @device.setter
    def device(self, value) -> None:
        self.__dict__["_device"] = torch.device(value)

    @property
    def input_spec(self) -> Composite:  # type: ignore[override]
        if not self.__dict__.get("_cache_specs", True):
            self._refresh()
        return self._input_spec

    @input_spec.setter
    def input_spec(self, value) -> None:
        EnvBase.input_spec.fset(self, value)

    @property
    def output_spec(self) -> Composite:  # type: ignore[override]
        if not self.__dict__.get("_cache_specs", True):
            self._refresh()
        return self._output_spec

    @output_spec.setter
    def output_spec(self, value) -> None:
        EnvBase.output_spec.fset(self, value)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)  # the submodules (``transform``), buffers, parameters
        except AttributeError as err:
            if name in _NO_FALLTHROUGH or name.startswith("__") or "_base_env" not in self.__dict__:
                raise
            prop = getattr(type(self), name, None)
            if isinstance(prop, property) and prop.fget is not None:
                # Python lands here when a property of the env raised AttributeError (e.g. a
                # transform's spec hook): report that error instead of reading the base env's value
                try:
                    return prop.fget(self)
                except AttributeError as inner:
                    raise AttributeError(
                        f"{type(self).__name__}.{name} could not be computed because an internal error "
                        f"was raised: {type(inner).__name__}({inner})"
                    ) from inner
            base = self.__dict__["_base_env"]
            try:
                return getattr(base, name)
            except AttributeError:
                raise AttributeError(
                    f"'{type(base).__name__}' object has no attribute {name!r} (nor has "
                    f"{type(self).__name__}: the attribute was looked up in the base env)"
                ) from err

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "transform" and "_base_env" in self.__dict__:
            self._install_transform(_as_transform(value, "TransformedEnv.transform"))
            return
        super().__setattr__(name, value)

    # ------------------------------------------------------------------ chain edits
    def _as_compose(self) -> Compose:
        """The transform as a ``Compose`` (a single transform becomes the first member)."""
        current = self.transform
        if isinstance(current, Compose):
            return current
        current._detach_container()
        chain = Compose(current)
        self._install_transform(chain)
        return chain

    def append_transform(self, transform: Transform | Callable[[TensorDictBase], TensorDictBase]) -> TransformedEnv:
        """Appends ``transform`` (or a callable on tensordicts) to the chain; returns ``self``.

        A single transform becomes a ``Compose`` of it and the new one. Specs are recomputed.

        Args:
            transform: the transform (it must not belong to another environment).

        Raises:
            TypeError: ``transform`` is neither a ``Transform`` nor a callable.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import StepCounter
            >>> env = TransformedEnv(CartPoleEnv(batch_size=[2])).append_transform(StepCounter(5))
            >>> env.done_keys
            ['done', 'terminated', 'truncated']
        """
        transform = _as_transform(transform, "append_transform")
        if transform is None:
            raise TypeError("append_transform takes a Transform or a callable, got None")
        self._as_compose().append(transform)
        return self

    def insert_transform(
        self, index: int, transform: Transform | Callable[[TensorDictBase], TensorDictBase]
    ) -> TransformedEnv:
        """Inserts ``transform`` at ``index`` of the chain (specs are recomputed); returns ``self``.

        Args:
            index: the position in the chain (negative indices count from the end).
            transform: the transform (or a callable on tensordicts).

        Raises:
            TypeError: ``transform`` is neither a ``Transform`` nor a callable.
            IndexError: ``index`` out of range.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import InitTracker, StepCounter
            >>> env = TransformedEnv(CartPoleEnv(), StepCounter()).insert_transform(0, InitTracker())
            >>> [type(t).__name__ for t in env.transform]
            ['InitTracker', 'StepCounter']
        """
        transform = _as_transform(transform, "insert_transform")
        if transform is None:
            raise TypeError("insert_transform takes a Transform or a callable, got None")
        self._as_compose().insert(index, transform)
        return self

    # ------------------------------------------------------------------ env hooks
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        transform = self.transform
        td_in = transform.inv(tensordict) if self._needs_inv else tensordict
        td_seen = _seen(td_in, tensordict)
        for key in self._inv_exports:  # inverse outputs that the caller's data records
            tensordict.set(key, td_in.get(key))
        partial = td_in.pop("_step", None) if self._needs_inv else None
        if partial is not None:  # an inverse (ConditionalSkip, MultiAction) selected the rows to step
            return _partial.step_partial(
                self,
                partial,
                td_in.batch_size,
                every=lambda: transform._step(td_seen, self.base_env._step_output(td_in)),
                some=lambda mask: transform._step(td_seen, self.base_env._step_rows(td_in, mask)),
                # nothing steps: neither the base env nor the transforms
                none=lambda: transform._step_skipped(td_seen, _partial.skip_next(self, td_seen, clone=True)),
            )
        next_tensordict = self.base_env._step_output(td_in)
        return transform._step(td_seen, next_tensordict)

    def _step_rows(self, tensordict: TensorDictBase, mask: torch.Tensor) -> TensorDictBase:
        # a partial step: the inverse transforms, the base env's own partial step, the transforms
        transform = self.transform
        td_in = transform.inv(tensordict) if self._needs_inv else tensordict
        return transform._step(_seen(td_in, tensordict), self.base_env._step_rows(td_in, mask))

    def _step_output(self, tensordict: TensorDictBase) -> TensorDictBase:
        # the base env completed its output; transforms write complete data
        next_td = self._step(tensordict)
        for key in self._echo_state_keys:  # state entries of the transforms (the base env echoes its own)
            if tget(next_td, key) is None:
                value = tget(tensordict, key)
                if value is not None:
                    tset(next_td, key, value)
        if self.run_type_checks:
            self._type_check(next_td)
        return next_td

    @property
    def _input_checks(self) -> tuple[list, list]:  # type: ignore[override]
        """The outer action leaves; the state entries the base env needs (transform state such
        as ``step_count`` may be missing: the transforms start it)."""
        cached = self._cache.get("_input_checks")
        if cached is None:
            actions = self._action_checks()
            own = set(self.state_keys)
            states = [k for k in self.base_env._input_checks[1] if k in own]
            cached = self._cache["_input_checks"] = (actions, states)
        return cached

    def _post_step_mdp(
        self, tensordict: TensorDictBase, tensordict_: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        # the transforms' hooks, then those of a base env that is itself transformed
        tensordict, tensordict_ = self.transform._post_step_mdp(tensordict, tensordict_)
        base = self.base_env
        if base._post_mdp_hook:
            tensordict, tensordict_ = base._post_step_mdp(tensordict, tensordict_)
        return tensordict, tensordict_

    def _check_batched_worker(self) -> None:
        self.transform._check_batched_worker_compat()
        self.base_env._check_batched_worker()

    def fake_tensordict(self) -> TensorDictBase:
        """The base class's zero-filled step, edited by the transforms' ``transform_fake_tensordict``.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> from gpusim.transforms import NextObservationDelta
            >>> env = TransformedEnv(PendulumEnv(), NextObservationDelta(["observation"]))
            >>> env.fake_tensordict()["next", "delta", "observation"].dtype
            torch.float16
        """
        return self.transform.transform_fake_tensordict(super().fake_tensordict())

    def _reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs: Any) -> TensorDictBase:
        transform = self.transform
        base = self.base_env
        outer = tensordict
        tensordict = transform._reset_env_preprocess(tensordict)  # None included: a first reset
        base_masks = masks
        resized = base.batch_size != self.batch_size  # a transform changed the batch size
        if resized or [lvl.prefix for lvl in base.done_levels] != [lvl.prefix for lvl in masks.levels]:
            base_masks = base.episode.resolve(tensordict, masks.sparse)  # (or the done levels)
        tensordict_reset = base._reset_rows(tensordict, base_masks, **kwargs)
        # the transforms see the base env's new data in the reset rows and the previous data in
        # the others (never placeholders); the final merge skips what is merged here
        base.episode.merge_early(tensordict_reset, tensordict, base_masks)
        if base_masks is not masks:
            masks.premerged.update(base_masks.premerged)
        if outer is not None and resized:
            tensordict = outer  # the transforms work in the env's (outer) batch size
        if tensordict is None:
            tensordict = TensorDict({}, batch_size=base.batch_size, device=base.device)
        return transform._reset(tensordict, tensordict_reset)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        return self._reset_rows(tensordict, self.episode.resolve(tensordict, self._sparse_now()), **kwargs)

    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds the base env, then the transforms; returns the next seed.

        Args:
            seed: the seed (``None``: unseeded).
            static_seed: return ``seed`` itself instead of the next seed.

        Returns:
            The seed for the next seeded object.

        Raises:
            TypeError: ``seed`` is neither an int nor ``None``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = TransformedEnv(CartPoleEnv(batch_size=[2]))
            >>> _ = env.set_seed(3)
            >>> first = env.reset()["observation"]
            >>> _ = env.set_seed(3)
            >>> bool((env.reset()["observation"] == first).all())
            True
        """
        if seed is not None and not isinstance(seed, int):
            raise TypeError(f"seed must be an int or None, got {seed!r}")
        seed = self.base_env.set_seed(seed, static_seed=static_seed)
        return self.transform.set_seed(seed)

    def _set_seed(self, seed: int | None) -> None:
        self.base_env._set_seed(seed)
        self.transform.set_seed(seed)

    # ------------------------------------------------------------------ misc
    def empty_cache(self) -> None:
        """Drops cached key plans here and in the transforms.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = TransformedEnv(CartPoleEnv())
            >>> env.empty_cache()
            >>> env.action_keys  # rebuilt on use
            ['action']
        """
        super().empty_cache()
        self.transform.empty_cache()

    def to(self, *args: Any, **kwargs: Any) -> TransformedEnv:
        """Moves the base env and the transforms (their buffers) to a device.

        Args:
            *args: a device (as for ``torch.nn.Module.to``).
            **kwargs: as for ``torch.nn.Module.to``.

        Returns:
            ``self``, with recomputed specs.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = TransformedEnv(CartPoleEnv(batch_size=[2])).to("cpu")
            >>> env.device, env.observation_spec.device
            (device(type='cpu'), device(type='cpu'))
        """
        self.base_env.to(*args, **kwargs)
        self.transform.to(*args, **kwargs)
        self._refresh()
        return self

    def close(self, *, raise_if_closed: bool = False) -> None:
        """Closes the transforms and the base env (``raise_if_closed`` is passed to the base env).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = TransformedEnv(CartPoleEnv())
            >>> env.close()
            >>> env.is_closed, env.base_env.is_closed
            (True, True)
        """
        self.transform.close()
        self.base_env.close(raise_if_closed=raise_if_closed)
        super().close()

    @property
    def is_closed(self) -> bool:
        """Whether the base env is closed (setting it sets the base env's).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = TransformedEnv(CartPoleEnv())
            >>> env.is_closed
            False
        """
        return self.base_env.is_closed

    @is_closed.setter
    def is_closed(self, value: bool) -> None:
        self.base_env.is_closed = value

    def get_state(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """The base env's :meth:`~gpusim.envs.native.NativeEnv.get_state`, plus the per-row
        buffers of the transforms (``"transforms"``: those whose leading dims are the batch dims,
        e.g. ``CatFrames``' history). Shared statistics (``VecNorm``) are not per row and are not
        part of a state: save them with ``state_dict()``. ``tensordict=None``: the root this
        env's last call returned (``reset``, ``step``, ``step_and_maybe_reset``, ``rollout``).

        Examples:
            >>> import gpusim as gs
            >>> env = gs.make("CartPole-v1", num_envs=2, seed=0)
            >>> sorted(env.get_state(env.reset()).keys())
            ['data', 'rng', 'transforms']
        """
        state = self.base_env.get_state(self._current_root() if tensordict is None else tensordict)
        state["transforms"] = {name: buf.clone() for name, buf in self._row_buffers().items()}
        return state

    def set_state(self, state: TensorDictBase) -> TensorDictBase:
        """Restores a state of :meth:`get_state` (the base env's and the transforms' per-row
        buffers) and returns the root data to continue from.

        Examples:
            >>> import gpusim as gs
            >>> env = gs.make("Pendulum-v1", num_envs=2, seed=0)
            >>> td = env.reset()
            >>> torch.equal(env.set_state(env.get_state(td))["state"], td["state"])
            True
        """
        data = self.base_env.set_state(state)
        saved = state.get("transforms", None)
        for name, buf in self._row_buffers().items():
            if saved is None or name not in saved.keys():
                raise ValueError(f"set_state: the state has no buffer {name!r} of the transforms (saved by get_state)")
            buf.copy_(saved[name])
        return data

    def _row_buffers(self) -> dict[str, torch.Tensor]:
        """The transforms' buffers whose leading dims are the batch dims, by ``"<index>.<name>"``."""
        B, out = self.batch_size, {}
        for i, transform in enumerate(self._as_compose()):
            for name, buf in transform.named_buffers():
                if buf.shape[: len(B)] == B and buf.ndim > len(B):
                    out[f"{i}.{name}"] = buf
        return out

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The transforms' state (statistics, buffers), as ``torch.nn.Module.state_dict``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import ObservationNorm
            >>> norm = ObservationNorm(loc=0.0, scale=2.0, in_keys=["observation"])
            >>> env = TransformedEnv(CartPoleEnv(), norm)
            >>> sorted(env.state_dict())
            ['transform.loc', 'transform.scale']
        """
        return super().state_dict(*args, **kwargs)

    def __setstate__(self, state: dict) -> None:
        """Restores a pickled or deep-copied env: its transform belongs to it again, so the
        transforms find their parent env (``RewardSum``'s reset keys, ``VecNorm``'s specs...).

        Examples:
            >>> import copy, pickle
            >>> from gpusim.envs.native import CartPoleEnv
            >>> from gpusim.transforms import RewardSum
            >>> env = TransformedEnv(CartPoleEnv(batch_size=[2], seed=0), RewardSum())
            >>> for twin in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
            ...     print(twin.transform.container is twin, twin.rollout(3).shape)
            True torch.Size([2, 3])
            True torch.Size([2, 3])
        """
        super().__setstate__(state)
        transform = self.__dict__["_modules"]["transform"]
        transform.__dict__["_container"] = self
        transform.reset_parent()

    def __repr__(self) -> str:
        env = "\n        ".join(repr(self.base_env).split("\n"))
        transform = "\n    ".join(repr(self.transform).split("\n"))
        return f"TransformedEnv(\n    env={env},\n    transform={transform})"


def _parent_view(base_env: EnvBase, transforms: list[Transform]) -> TransformedEnv:
    """A ``TransformedEnv`` of ``base_env`` with ``transforms`` that does not claim them.

    Used by :attr:`Transform.parent`: the transforms keep their real container; the view has
    the specs (and behaviour: buffers are shared) of the env up to a transform.
    """
    chain = Compose.__new__(Compose)
    Transform.__init__(chain)
    chain.transforms = nn.ModuleList(transforms)
    env = TransformedEnv(base_env, chain, auto_unwrap=False)
    env.__dict__["_is_parent_view"] = True
    return env


TRANSFORM_HOOKS["TransformedEnv"] = TransformedEnv
