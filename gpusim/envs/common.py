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
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, NamedTuple

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase
from torch import nn

from gpusim.envs import _keys
from gpusim.envs import _partial, _policy
from gpusim.envs._fasttd import fast_get, fast_get_path, fast_pop, fast_set, get_via, inner, is_plain
from gpusim.envs._keys import DONE_NAMES, DoneLevel, NestedKey
from gpusim.envs._action_guard import action_value_error, guarded_step, plan_guards
from gpusim.envs._args import positive_int
from gpusim.envs._seeding import next_seed
from gpusim.envs._step_inputs import not_a_tensordict, same_device
from gpusim.envs.episode import AutoResetMode, EpisodePlan, ResetMasks, native_autoreset_step, resolve_set_state
from gpusim.envs._rollout_stack import stack_steps
from gpusim.envs._step_mdp import StepMDPPlan
from gpusim.envs.utils import StepMDP
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
        redirect = cls.__dict__.get("_redirect_construction")
        if redirect is not None:  # a class that builds another env instead (a backend choice)
            instance = redirect.__get__(None, cls)(args, kwargs)
            if instance is not None:
                return instance
        # construction options every env takes, whatever its __init__ accepts (as in TorchRL)
        spec_locked = kwargs.pop("spec_locked", None)
        auto_reset = kwargs.pop("auto_reset", False)
        auto_reset_replace = kwargs.pop("auto_reset_replace", True)
        compile_options = _compile_options(kwargs.pop("compile", None))
        instance = super().__call__(*args, **kwargs)
        if spec_locked is not None:
            instance.__dict__["_spec_locked"] = bool(spec_locked)
        instance._post_init()
        if spec_locked is False and instance.is_spec_locked:  # an __init__ that locked on its own
            instance.set_spec_lock_(False)
        # an env that stores a ``frame_skip`` > 1 but does not repeat its own steps
        # (``_has_frame_skip = False``) gets a FrameSkipTransform (TorchRL's behaviour). Read from
        # ``__dict__``: a batched env's ``__getattr__`` would start its workers.
        frame_skip = instance.__dict__.get("frame_skip", 1)
        if isinstance(frame_skip, int) and frame_skip > 1 and not getattr(cls, "_has_frame_skip", False):
            instance = _hook("frame_skip")(instance, frame_skip)
        if auto_reset:
            instance = _hook("auto_reset")(instance, replace=auto_reset_replace)
        if compile_options is not None:
            instance.compile_step_and_maybe_reset(**compile_options)
        return instance


def _compile_options(value: Any) -> dict | None:
    """The ``compile=`` construction option: ``None``/``False`` (nothing), ``True`` (default
    options) or a dict of options for :meth:`EnvBase.compile_step_and_maybe_reset`."""
    if value is None or value is False:
        return None
    if value is True:
        return {}
    if isinstance(value, dict):
        return dict(value)
    raise TypeError(
        f"compile must be a bool, None or a dict of torch.compile options (with an optional 'warmup'), "
        f"got {type(value).__name__} {value!r}"
    )


class _Warmup:
    """Runs ``eager`` for the first ``warmup`` calls, then ``compiled`` (the data layout of the
    first calls, right after a reset, differs from the steady state's)."""

    def __init__(self, eager: Callable, compiled: Callable, warmup: int) -> None:
        self.eager, self.compiled, self.left = eager, compiled, warmup

    def __call__(self, *args: Any) -> Any:
        if self.left > 0:
            self.left -= 1
            return self.eager(*args)
        return self.compiled(*args)


#: What the transforms layer gives the envs (the envs never import it): ``"TransformedEnv"``
#: (for ``append_transform``) and ``"auto_reset"`` (``env -> wrapped env``, for
#: ``auto_reset=True``), registered by :mod:`gpusim.transforms` when it is imported.
TRANSFORM_HOOKS: dict[str, Callable[..., Any]] = {}


def _hook(name: str) -> Callable[..., Any]:
    hook = TRANSFORM_HOOKS.get(name)
    if hook is None:  # pragma: no cover - gpusim/__init__ always imports the transforms
        raise RuntimeError(f"{name} needs gpusim.transforms: import gpusim (or gpusim.transforms) first")
    return hook


class _ActionCheck(NamedTuple):
    """What the step boundary checks of one action leaf, planned when the specs lock."""

    key: NestedKey
    shape: torch.Size
    dtype: torch.dtype
    #: the other shape the spec's own samples take (TorchRL's ``MultiCategorical`` with
    #: ``remove_singleton`` and shape ``[1]`` drops the last dim), or ``None``
    squeezed: torch.Size | None = None
    #: ``((shape, dtype), ...)`` of the parts of a heterogeneous (lazy-stacked) leaf, or ``None``
    parts: tuple | None = None
    stack_dim: int = 0
    #: the spec's device (``None``: not checked)
    device: torch.device | None = None


def _dynamic_match(shape: torch.Size, spec_shape: torch.Size) -> bool:
    """Whether ``shape`` fits a spec shape with dynamic (``-1``) dims: any size there."""
    return (
        -1 in spec_shape
        and len(shape) == len(spec_shape)
        and all(s == d or d == -1 for s, d in zip(shape, spec_shape))
    )


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
            d = self.__dict__
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

    **Action values are not checked by default** (that would read them on the host every step):
    an index outside its ``Categorical`` range or a NaN action is no error in the default mode.
    Envs whose class sets :attr:`guard_actions` (every native env) apply a documented rule
    instead, one fused elementwise op: indices are clamped into range, NaN becomes 0 (see
    :mod:`gpusim.envs._action_guard`). Turn the debug mode on (``run_type_checks=True``, or
    ``GPUSIM_VALIDATE=1``) to have out-of-range actions raised with the key, the expected range
    and the received value.

    Every env also takes these construction options, whatever its ``__init__`` accepts (as in
    TorchRL): ``spec_locked`` (see :meth:`set_spec_lock_`), and ``auto_reset=True`` (with
    ``auto_reset_replace``) for envs whose ``_step`` starts the next episode by itself: the env
    is then returned wrapped in an :class:`~gpusim.transforms.AutoResetEnv`. Constructor
    arguments reach ``__new__`` too, so subclasses may set specs and attributes before calling
    ``super().__init__()``.

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

    #: Whether the env repeats its own steps for a ``frame_skip`` attribute. When ``False`` (the
    #: default) and ``__init__`` stores ``self.frame_skip > 1``, construction returns the env
    #: wrapped in ``TransformedEnv(env, FrameSkipTransform(frame_skip))`` (TorchRL's behaviour).
    _has_frame_skip: bool = False

    #: Whether ``_step`` is a pure function of its input (the state lives in the tensordict, as in
    #: the native envs): a row can then be stepped and its result discarded without changing the
    #: env. Transforms that step some rows only (no-op starts) need it on batched envs.
    functional_step: bool = False

    #: Whether the physics receive guarded actions: out-of-range ``Categorical`` indices clamped
    #: into range, NaN float actions replaced by 0; the tensordict keeps the actions as given
    #: (:mod:`gpusim.envs._action_guard`). On for the native envs; library wrappers leave action
    #: values to the library's own rules.
    guard_actions: bool = False

    #: Whether ``step_and_maybe_reset`` and ``rollout`` call :meth:`_post_step_mdp` (set by a
    #: ``TransformedEnv`` whose transforms define that hook; plain envs never do).
    _post_mdp_hook: bool = False

    def __new__(cls, *args: Any, _inplace_update: bool = False, _batch_locked: bool = True, **kwargs: Any) -> "EnvBase":
        """Creates the env with default state, so that attributes and specs can be set before
        ``super().__init__()`` runs; constructor arguments are accepted (and left to
        ``__init__``). Specs set on the class (``cls._input_spec``/``cls._output_spec``, as
        TorchRL's mock envs do) move to the instance."""
        env = super().__new__(cls)
        nn.Module.__init__(env)
        d = env.__dict__
        d["_cache"] = {}
        d["_spec_locked"] = True
        d["_locked_now"] = False
        d["_closed"] = False
        d["_device"] = torch.device("cpu")
        d["_batch_size"] = torch.Size([])
        d["_auto_reset_mode"] = None
        d["_batch_locked"] = bool(_batch_locked)
        d["run_type_checks"] = False
        d["allow_done_after_reset"] = False
        for name, parts in (
            ("_input_spec", ("full_action_spec", "full_state_spec")),
            ("_output_spec", ("full_observation_spec", "full_reward_spec", "full_done_spec")),
        ):
            spec = None
            if isinstance(cls.__dict__.get(name), Composite):
                spec = cls.__dict__[name].clone()
                delattr(cls, name)
            if spec is None:
                spec = Composite({part: Composite(shape=()) for part in parts}, shape=())
            d[name] = spec
        return env

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
        d = self.__dict__
        if "_modules" not in d:  # built without EnvBase.__new__ (e.g. object.__new__ + __init__)
            nn.Module.__init__(self)
        d["_spec_locked"] = spec_locked
        if device is not None or "_device" not in d:
            d["_device"] = _as_device(device)
        if batch_size is not None or "_batch_size" not in d:
            d["_batch_size"] = _as_size(batch_size)
        d["_cache"] = {}
        d["_locked_now"] = False
        d.setdefault("_closed", False)
        d["_auto_reset_mode"] = (
            None if auto_reset_mode is None else AutoResetMode.parse(auto_reset_mode, self._device)
        )
        self.run_type_checks = bool(run_type_checks) or os.environ.get("GPUSIM_VALIDATE", "0") not in ("", "0")
        self.allow_done_after_reset = allow_done_after_reset
        d.setdefault("_batch_locked", True)
        B, device = self.batch_size, self.device
        specs = {
            "_input_spec": ("full_action_spec", "full_state_spec"),
            "_output_spec": ("full_observation_spec", "full_reward_spec", "full_done_spec"),
        }
        for name, parts in specs.items():
            spec = d.get(name)
            if not isinstance(spec, Composite) or not list(spec.keys(True, True)):
                # nothing set yet: empty containers of the env's batch and device
                d[name] = Composite({part: Composite(shape=B, device=device) for part in parts}, shape=B, device=device)
                continue
            # specs set before __init__ (or on the class): adopt the env's batch and device
            spec.unlock_()
            for part in parts:
                if part not in spec.keys():
                    spec[part] = Composite(shape=spec.shape, device=spec.device)
            if spec.device != device:
                spec = spec.to(device)
            if spec.shape != B:
                if not spec.shape and all(not spec[part].shape for part in parts):
                    spec = spec.expand(B)  # set before the batch size was known: one env's specs
                else:
                    spec.shape = B
            d[name] = spec

    @property
    def batch_locked(self) -> bool:
        """Whether the env only takes tensordicts of its own ``batch_size`` (read-only; set at
        construction with ``EnvBase.__new__(cls, _batch_locked=...)``).

        Raises:
            RuntimeError: (setter) always: the property is read-only.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2])
            >>> env.batch_locked
            True
            >>> env.reset(env.reset()[:1])  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            gpusim.envs.common.BatchSizeError: Expected a tensordict with ... got batch_size [1]
        """
        return self.__dict__.get("_batch_locked", True)

    @batch_locked.setter
    def batch_locked(self, value: bool) -> None:
        raise RuntimeError("batch_locked is a read-only property")

    @property
    def auto_reset_mode(self) -> AutoResetMode:
        """How ``step_and_maybe_reset`` resets finished rows (chosen at construction; by default
        ``SPARSE`` on the CPU and ``MASKED`` on other devices). See :mod:`gpusim.envs.episode`.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv().auto_reset_mode
            <AutoResetMode.SPARSE: 'sparse'>
            >>> CartPoleEnv(auto_reset_mode="masked").auto_reset_mode.value
            'masked'
        """
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
        self.__dict__["_spec_locked"] = mode
        return self

    @property
    def is_spec_locked(self) -> bool:
        """Whether the env's specs are locked (settable: calls :meth:`set_spec_lock_`).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv(batch_size=(2,)).is_spec_locked
            True
        """
        return bool(self.__dict__.get("_locked_now", False))

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
        self.__dict__["_batch_size"] = value
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
        self.__dict__["_device"] = torch.device(value)

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
        self.__dict__["_closed"] = bool(value)

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
            self.__dict__["_input_spec"] = value
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

    def _episode_for(self, tensordict: TensorDictBase | None) -> EpisodePlan:
        """The episode plan for ``tensordict``: :attr:`episode`, or for a batch-unlocked env
        without batch dims run on batched data, the plan of the data's batch (its done specs
        expanded to it; kept with the other plans until the specs change)."""
        episode = self.episode
        if tensordict is None or self.batch_size or self.batch_locked:
            return episode
        batch = tensordict.batch_size
        if batch == self.batch_size:
            return episode
        cache = self._cache
        plans = cache.get("_batched_episodes")
        if plans is None:
            plans = {}
            if self.__dict__.get("_locked_now", False):
                cache["_batched_episodes"] = plans
        plan = plans.get(batch)
        if plan is None:
            spec = self.full_done_spec
            plan = plans[batch] = EpisodePlan(spec.expand(*batch, *spec.shape), batch)
        return plan

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
    def _step_mdp_plan(self) -> StepMDPPlan:
        return StepMDP(self).plan

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
        ``done := terminated | truncated``); a level with neither, and a missing ``truncated``
        the spec declares, gets ``False`` flags (as TorchRL does)."""
        for level in self.done_levels:
            node = data if level.prefix == () else fast_get_path(data, level.prefix)
            if node is None:  # a group the output does not hold is left alone
                continue
            done = fast_get(node, "done")
            terminated = fast_get(node, "terminated")
            if done is None and terminated is None:
                self._false_level(data, level)
                continue
            if done is None or terminated is None:
                if terminated is None:
                    fast_set(node, "terminated", done)
                else:
                    truncated = fast_get(node, "truncated")
                    fast_set(node, "done", terminated if truncated is None else terminated | truncated)
            if level.has_truncated and fast_get(node, "truncated") is None:
                self._false_level(data, level, ("truncated",))
        return data

    def _false_level(self, data: TensorDictBase, level: DoneLevel, names: tuple = DONE_NAMES) -> None:
        """Writes ``False`` flags (the spec's zeros, with the data's leading dims) for the
        ``names`` of ``level``."""
        spec = self.full_done_spec
        lead = data.batch_size[: len(data.batch_size) - len(self.batch_size)]
        for key in level.keys:
            if _keys.as_tuple(key)[-1] in names:
                data.set(key, spec[key].zero(lead))

    def _check_batch(self, tensordict: TensorDictBase, where: str = "step") -> None:
        """A batch-locked env, or any env with batch dims, takes tensordicts of its own batch
        size only; a batch-unlocked env without batch dims takes any batch size."""
        try:
            batch_size = tensordict.batch_size
        except AttributeError:  # not a tensordict (an array, a tensor, a dict): say what was expected
            raise TypeError(not_a_tensordict(self, tensordict, where)) from None
        if batch_size != self.batch_size and (self.batch_locked or self.batch_size):
            raise BatchSizeError(
                f"Expected a tensordict with shape==env.batch_size, i.e. {list(self.batch_size)} "
                f"({type(self).__name__}.batch_size), got batch_size {list(tensordict.batch_size)}"
            )

    # ------------------------------------------------------------------ reset / step
    #: Whether ``_reset`` can honour a state passed in its input tensordict (a deterministic
    #: ``reset(td, set_state=True)``, TorchRL's flag of the same name): a class whose ``_reset``
    #: reads its ``state_spec`` entries from the input sets it to ``True`` and then receives a
    #: ``set_state`` kwarg; ``set_state=True`` on other envs raises.
    _supports_set_state: bool = False

    def _input_td_has_state(self, tensordict: TensorDictBase | None) -> bool:
        """Whether a ``reset`` input holds an entry of the env's ``state_spec`` (what
        ``set_state=None`` honours, with a warning). Envs may override it."""
        if tensordict is None:
            return False
        keys = [_keys.unravel(k) for k in self.state_spec.keys(True, True)]
        if not keys:
            return False
        present = {_keys.unravel(k) for k in tensordict.keys(True, False)}
        return any(k in present for k in keys)

    def reset(
        self, tensordict: TensorDictBase | None = None, *, set_state: bool | None = None, **kwargs: Any
    ) -> TensorDictBase:
        """Resets the env (all rows, or the rows selected by ``"_reset"`` entries).

        The ``"_reset"`` entries are resolved once (:meth:`EpisodePlan.resolve
        <gpusim.envs.episode.EpisodePlan.resolve>`: bool, the level's done shape, a root entry
        prevails). With an input tensordict, the rows not reset keep the input's data, the
        ``"_reset"`` entries are erased, and the input is updated with the result and returned.

        Args:
            tensordict: ``None`` (reset every row), or the current data with ``"_reset"``
                entries selecting the rows to reset.
            set_state: ``True``: reset to the state held by ``tensordict`` (its entries of the
                ``state_spec``), for envs whose class sets ``_supports_set_state = True``;
                ``False``: ignore that state; ``None``: honour a state present in the input, with
                a ``FutureWarning`` (TorchRL's transition rule, see
                :func:`~gpusim.envs.episode.resolve_set_state`). Handed to ``_reset`` as the
                ``set_state`` kwarg, only by envs that support it.
            **kwargs: forwarded to ``_reset``.

        Returns:
            The reset data (the input tensordict, updated, when one was given).

        Raises:
            TypeError, ValueError: a ``"_reset"`` entry that is not bool or not of its level's
                done shape (naming the key, expected and received dtype/shape).
            NotImplementedError: ``set_state=True`` on an env that cannot honour a state.

        Examples:
            >>> import torch
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[3], seed=0)
            >>> td = env.reset()
            >>> sorted(td.keys())
            ['done', 'observation', 'state', 'terminated']
            >>> before = td["state"].clone()
            >>> td = env.reset(td.set("_reset", torch.tensor([[False], [True], [False]])))
            >>> (td["state"] != before).any(-1).tolist()  # only row 1 was reset
            [False, True, False]
        """
        if tensordict is not None:
            self._check_batch(tensordict, "reset")
        self.__dict__["_was_reset"] = True
        supported = self._supports_set_state
        if supported or set_state is not None:
            has_state = supported and set_state is None and self._input_td_has_state(tensordict)
            set_state = resolve_set_state(set_state, supported, has_state, type(self).__name__)
            if set_state is not None:
                kwargs["set_state"] = set_state
        episode = self._episode_for(tensordict)
        masks = episode.resolve(tensordict, self._sparse_now())
        return self._reset_and_merge(tensordict, masks, **kwargs)

    def _reset_and_merge(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs) -> TensorDictBase:
        tensordict_reset = self._reset_rows(tensordict, masks, **kwargs)
        if self.run_type_checks:
            self._type_check(tensordict_reset, reset=True)
        if tensordict is None:
            return tensordict_reset
        return self._episode_for(tensordict).merge(tensordict_reset, tensordict, masks)

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
        self._fix_output_shapes(tensordict_reset)
        return self._complete_done(tensordict_reset)

    def _step_output(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The complete ``"next"`` data of a step: ``_step`` plus done completion and state echo
        (for containers that step an inner env: ``TransformedEnv``, frame skip, batched workers)."""
        guards = self._action_guards
        if guards:
            return guarded_step(self, tensordict, guards)
        return self._finish_step(tensordict, self._step(tensordict))

    @_cached_plan
    def _action_guards(self) -> tuple:
        """The guards of the action entries when :attr:`guard_actions` is set, else ``()``."""
        return plan_guards(self.full_action_spec, list(self.action_keys)) if self.guard_actions else ()

    @_cached_plan
    def _output_leaf_shapes(self) -> tuple:
        """``(key, shape)`` of the reward and done leaves of fixed shape: a step that returns
        one of them with another shape of the same size (a Python bool for ``[1]``) is reshaped
        to the spec's, as TorchRL does."""
        out = []
        for spec in (self.full_reward_spec, self.full_done_spec):
            for key, leaf in spec.items(True, True):
                shape = torch.Size(leaf.shape)
                if -1 not in shape:
                    out.append((_keys.unravel(key), shape, shape.numel()))
        return tuple(out)

    @_cached_plan
    def _root_output_shapes(self) -> tuple | None:
        """:attr:`_output_leaf_shapes` as ``(key, shape)`` when it holds every reward and done leaf
        and all are root entries (the common layout), else ``None``: see :meth:`_output_complete`."""
        leaves = self._output_leaf_shapes
        if len(leaves) != len(self.reward_keys) + len(self.done_keys) or not all(isinstance(k, str) for k, _, _ in leaves):
            return None
        return tuple((key, shape) for key, shape, _ in leaves)

    def _output_complete(self, next_td: TensorDictBase) -> bool:
        """Whether a raw step output already holds every reward and done leaf of the specs with
        the specs' shapes (one dict lookup per leaf): reshaping and done completion then have
        nothing to do."""
        plan = self._root_output_shapes
        data = inner(next_td)
        if plan is None or data is None or next_td.batch_size != self.batch_size:
            return False
        for key, shape in plan:
            value = data.get(key)
            if value is None or value.shape != shape:
                return False
        return True

    def _fix_output_shapes(self, next_td: TensorDictBase) -> None:
        if next_td.batch_size != self.batch_size:
            return
        data = inner(next_td)  # a plain TensorDict's root dict, read directly (same lookups)
        for key, shape, numel in self._output_leaf_shapes:
            value = get_via(data, next_td, key)
            if value is not None and value.shape != shape and value.numel() == numel:
                next_td.set(key, value.reshape(shape))

    def _finish_step(self, tensordict: TensorDictBase, next_td: TensorDictBase) -> TensorDictBase:
        """Done completion, state echo and (debug mode) type checks of the raw ``next_td``."""
        if not self._output_complete(next_td):
            self._fix_output_shapes(next_td)
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

        A ``"_step"`` entry (bool, one flag per row) steps the selected rows only; the others
        get their current data as ``"next"`` data, with a zero reward (partial steps, see
        :mod:`gpusim.envs._partial`). It is removed from the input.

        Args:
            tensordict: the root data: the state (from ``reset`` or the previous step) and the
                action.

        Returns:
            ``tensordict``, with the step's output under ``"next"``.

        Raises:
            KeyError: a missing action entry, or a missing state entry (call ``reset()`` first).
            ValueError, TypeError: an action of the wrong shape or dtype (naming the key, the
                expected and the received value); a ``"_step"`` entry that is not a bool mask
                of the batch, or that selects some rows of an env that cannot step them alone.

        Examples:
            >>> import torch
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2], seed=0)
            >>> td = env.step(env.reset().set("action", torch.tensor([0, 1])))
            >>> td["next", "reward"].flatten().tolist(), td["next", "observation"].shape
            ([1.0, 1.0], torch.Size([2, 4]))
            >>> env.step(env.reset())
            Traceback (most recent call last):
            ...
            KeyError: "CartPoleEnv.step: the input has no action entry 'action' (expected shape [2], dtype torch.int64); write one first, e.g. env.rand_action(td) or a policy"
        """
        self._check_batch(tensordict)
        partial = fast_pop(tensordict, "_step")
        self._check_inputs(tensordict)
        if partial is None:
            return fast_set(tensordict, "next", self._step_output(tensordict))
        mask = _partial.step_mask(self, partial, tensordict.batch_size)
        if self._sparse_now():
            if not bool(mask.any()):
                return fast_set(tensordict, "next", _partial.skip_next(self, tensordict, clone=True))
            if bool(mask.all()):
                return fast_set(tensordict, "next", self._step_output(tensordict))
        return fast_set(tensordict, "next", self._step_rows(tensordict, mask))

    def _step_rows(self, tensordict: TensorDictBase, mask: torch.Tensor) -> TensorDictBase:
        """Hook: the complete ``"next"`` data of a partial step, ``mask`` (bool, the input's batch
        shape) selecting the rows to step; the skipped rows hold
        :func:`~gpusim.envs._partial.skip_next` data. Default: a functional env steps every row
        and keeps the selected ones; a batch-unlocked env without batch dims steps the selected
        rows; other envs raise. Batched envs step the selected workers only."""
        return _partial.step_selected_rows(self, tensordict, mask)

    @_cached_plan
    def _input_checks(self) -> tuple[list, list]:
        """``[(key, shape, dtype)]`` of the action leaves and ``[key]`` of the state leaves."""
        actions = self._action_checks()
        states = [k for k in self.state_keys if k not in set(self.action_keys)]
        return actions, states

    def _action_checks(self) -> list[_ActionCheck]:
        """What the step boundary checks of each action leaf (see :class:`_ActionCheck`)."""
        spec = self.full_action_spec
        out = []
        for k in self.action_keys:
            leaf = spec[k]
            if -1 in leaf.shape and hasattr(leaf, "stack_dim"):
                # heterogeneous leaf (lazy stack of unequal specs): checked part by part
                parts = tuple((p.shape, p.dtype) for p in leaf.unbind(leaf.stack_dim))
                out.append(_ActionCheck(k, leaf.shape, leaf.dtype, None, parts, leaf.stack_dim))
                continue
            squeezes = getattr(leaf, "_squeezes", None)
            squeezed = leaf.shape[:-1] if squeezes is not None and squeezes() else None
            device = leaf.device if self.device is not None else None  # None: a mixed-device env
            out.append(_ActionCheck(k, leaf.shape, leaf.dtype, squeezed, device=device))
        return out

    def _check_stacked_action(self, tensordict: TensorDictBase, check: _ActionCheck) -> None:
        """The step-boundary check of a heterogeneous action leaf: one tensor per stacked spec."""
        name = type(self).__name__
        key, parts = check.key, check.parts
        try:
            values = tensordict.get(key, as_list=True)
        except KeyError:
            values = None
        if values is None:
            raise KeyError(f"{name}.step: the input has no action entry {_keys.fmt(key)}; write one first, e.g. "
                           "env.rand_action(td) or a policy")
        if isinstance(values, torch.Tensor):
            values = list(values.unbind(check.stack_dim))
        if len(values) != len(parts):
            raise ValueError(f"{name}.step: the action {_keys.fmt(key)} has {len(values)} stacked parts, expected "
                             f"{len(parts)} (the action spec's lazy stack)")
        for i, (value, (shape, dtype)) in enumerate(zip(values, parts)):
            if value.shape != shape:
                raise ValueError(f"{name}.step: part {i} of the action {_keys.fmt(key)} has shape {list(value.shape)}, "
                                 f"expected {list(shape)} (the action spec's shape)")
            if value.dtype != dtype:
                raise TypeError(f"{name}.step: part {i} of the action {_keys.fmt(key)} has dtype {value.dtype}, "
                                f"expected {dtype} (the action spec's dtype)")

    def _check_inputs(self, tensordict: TensorDictBase) -> None:
        actions, states = self._input_checks
        name = type(self).__name__
        lead = tensordict.batch_size if not self.batch_size and tensordict.batch_size else None
        data = inner(tensordict)  # a plain TensorDict's root dict, read directly (same lookups)
        for check in actions:
            if check.parts is not None:
                self._check_stacked_action(tensordict, check)
                continue
            key, shape, dtype, squeezed = check.key, check.shape, check.dtype, check.squeezed
            if lead is not None:  # a batch-unlocked env fed a batch: the rows lead the spec shape
                shape = lead + shape
            value = get_via(data, tensordict, key)
            if value is None:
                raise KeyError(
                    f"{name}.step: the input has no action entry {_keys.fmt(key)} (expected shape {list(shape)}, "
                    f"dtype {dtype}); write one first, e.g. env.rand_action(td) or a policy"
                )
            if (
                value.shape != shape
                and (squeezed is None or lead is not None or value.shape != squeezed)
                and not _dynamic_match(value.shape, shape)
            ):
                raise ValueError(
                    f"{name}.step: the action {_keys.fmt(key)} has shape {list(value.shape)}, expected {list(shape)} "
                    "(the action spec's shape)"
                )
            if value.dtype != dtype:
                raise TypeError(
                    f"{name}.step: the action {_keys.fmt(key)} has dtype {value.dtype}, expected {dtype} "
                    "(the action spec's dtype)"
                )
            device = check.device
            if device is not None and value.device != device and not same_device(value.device, device):
                raise ValueError(
                    f"{name}.step: the action {_keys.fmt(key)} is on device {value.device}, expected {device} "
                    f"(the env's device): move it first, e.g. action.to({str(device)!r})"
                )
        for key in states:
            value = get_via(data, tensordict, key)
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
            message = action_value_error(f"{type(self).__name__}.step", key, spec[key], tensordict.get(key))
            if message is not None:
                raise ValueError(message)

    @property
    def _run_type_checks(self) -> bool:
        """TorchRL's name of the attribute behind :attr:`run_type_checks` (the same flag)."""
        return self.run_type_checks

    @_run_type_checks.setter
    def _run_type_checks(self, value: bool) -> None:
        self.run_type_checks = bool(value)

    def _type_check(self, data: TensorDictBase, reset: bool = False) -> None:
        """Debug mode: every output leaf present, of its spec's dtype, finite and inside its spec."""
        keys = [*self.observation_keys, *self.done_keys]
        if not reset:
            keys += self.reward_keys
        where = "reset" if reset else "step"
        for key in keys:
            value = data.get(key, None)
            if value is None:
                raise KeyError(f"{type(self).__name__}: the {where} output misses the key {_keys.fmt(key)}")
            spec = self.output_spec[self._spec_parent(key)][key]
            if isinstance(value, torch.Tensor) and value.dtype != spec.dtype:
                name = ".".join(_keys.as_tuple(key))
                raise TypeError(
                    f"{type(self).__name__}: the {where} output {_keys.fmt(key)}: expected "
                    f"{name}.dtype to be {spec.dtype} (its spec's) but got {value.dtype}"
                )
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

    def step_mdp(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The root of the next step built from a stepped ``tensordict`` with the env's keys:
        the ``"next"`` entries, the other root entries and the actions (rewards dropped).

        Unlike the step loop (which drops the actions), the action entries are kept, so that a
        policy can read the previous action.

        Examples:
            >>> from gpusim import CartPoleEnv
            >>> env = CartPoleEnv()
            >>> td = env.step(env.rand_action(env.reset()))
            >>> sorted(env.step_mdp(td).keys())
            ['action', 'done', 'observation', 'state', 'terminated']
        """
        return self._step_mdp_keep_action(tensordict)

    @_cached_plan
    def _step_mdp_keep_action(self) -> StepMDPPlan:
        return StepMDP(self, exclude_action=False).plan

    def any_done(self, tensordict: TensorDictBase) -> bool:
        """Whether any row of ``tensordict`` (a ``"next"`` tensordict, or the root of the next
        step) is done, terminated or truncated at any done level; writes ``"_reset"`` (the OR
        of the level's flags) at the levels where something is done.

        This reads the flags on the host (a device sync on accelerators).

        Examples:
            >>> import torch
            >>> from gpusim import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2])
            >>> td = env.reset()
            >>> td["done"] = torch.tensor([[False], [True]])
            >>> env.any_done(td), td["_reset"].squeeze(-1).tolist()
            (True, [False, True])
        """
        from gpusim.envs.utils import terminated_or_truncated

        return terminated_or_truncated(tensordict, full_done_spec=self.full_done_spec, key="_reset")

    def all_actions(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """Every action of a fully discrete action spec, stacked on a new leading dim.

        With several action entries, every combination is listed (the first entry varies
        slowest). With ``tensordict``, the env is reset with it first.

        Returns:
            A tensordict of batch size ``[n_actions, *env.batch_size]``.

        Raises:
            TypeError: an action spec that cannot be enumerated (continuous).

        Examples:
            >>> from gpusim import CartPoleEnv
            >>> CartPoleEnv(batch_size=[3]).all_actions()["action"]
            tensor([[0, 0, 0],
                    [1, 1, 1]])
        """
        if tensordict is not None:
            self.reset(tensordict)
        spec = self.full_action_spec
        keys = self.action_keys
        values = []
        for key in keys:
            leaf = spec[key]
            try:
                values.append(leaf.enumerate())
            except (NotImplementedError, AttributeError) as err:
                raise TypeError(
                    f"all_actions needs discrete action specs; the action {_keys.fmt(key)} has a "
                    f"{type(leaf).__name__} spec, which cannot be enumerated"
                ) from err
        counts = [v.shape[0] for v in values]
        grids = torch.cartesian_prod(*[torch.arange(n, device=self.device) for n in counts])
        grids = grids.reshape(-1, len(counts))
        out = TensorDict({}, batch_size=[grids.shape[0], *self.batch_size], device=self.device)
        for i, (key, value) in enumerate(zip(keys, values)):
            out.set(key, value[grids[:, i]])
        return out

    def maybe_reset(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Resets the rows whose ``done`` (or ``truncated``) flag is set, in the env's
        :attr:`auto_reset_mode`: ``MASKED`` resets all rows through masks without reading flags on
        the host; ``SPARSE`` reads the done rows once and does no reset work when there are none.

        Args:
            tensordict: the root of the next step (``step_mdp`` of a stepped tensordict), with
                its done flags.

        Returns:
            The root with the finished rows reset (the input, updated).

        Examples:
            >>> import torch
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2], seed=0)
            >>> td = env.reset()
            >>> td["done"] = torch.tensor([[True], [False]])  # row 0 has finished
            >>> before = td["state"].clone()
            >>> td = env.maybe_reset(td)
            >>> (td["state"] != before).any(-1).tolist(), td["done"].flatten().tolist()
            ([True, False], [False, False])
        """
        episode = self._episode_for(tensordict)
        if self._sparse_now():  # the done flags are read on the host once; no reset work without one
            masks = episode.sparse_done_masks(tensordict)
            if masks is None:
                return tensordict
        else:
            masks = episode.done_masks(tensordict)
        episode.write(tensordict, masks)
        return self._reset_and_merge(tensordict, masks)

    def step_and_maybe_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        """Steps, builds the next root with ``step_mdp`` and resets the done rows.

        Args:
            tensordict: the root data with an action.

        Returns:
            ``(tensordict_with_next, next_root)``: the stepped input, and the input of the next
            step (reset where a done flag was set).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[4], seed=0)
            >>> td = env.reset()
            >>> for _ in range(50):  # a loop that never stops: finished rows restart
            ...     data, td = env.step_and_maybe_reset(env.rand_action(td))
            >>> data["next", "observation"].shape, td["done"].any().item()
            (torch.Size([4, 4]), False)
        """
        compiled = self.__dict__.get("_compiled_step_and_maybe_reset")
        if compiled is not None:
            return compiled(tensordict)
        return self._step_and_maybe_reset(tensordict)

    def _step_and_maybe_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        if self.__dict__.get("_native_autoreset", False):
            return native_autoreset_step(self, tensordict)
        tensordict = self.step(tensordict)
        tensordict_ = self._step_mdp(tensordict)
        if self._post_mdp_hook:
            tensordict, tensordict_ = self._post_step_mdp(tensordict, tensordict_)
        tensordict_ = self.maybe_reset(tensordict_)
        return tensordict, tensordict_

    def compile_step_and_maybe_reset(self, *, warmup: int | None = None, **kwargs: Any) -> "EnvBase":
        """Compiles :meth:`step_and_maybe_reset` in place with ``torch.compile``; returns the env.

        TorchRL's ``env.compile(**options)`` and ``compile=`` construction option (the latter is
        accepted by every env: ``CartPoleEnv(compile=True)``, ``compile={"warmup": 2, ...}``).
        gpusim's own :meth:`compile` builds a compiled policy-and-step loop instead
        (:class:`~gpusim.envs.compiled.CompiledRollout`). :meth:`eager` undoes it.

        Args:
            warmup: the first ``warmup`` calls run eagerly (the data layout right after a reset
                differs from the steady state's, which would compile twice); ``None``: compile
                from the first call.
            **kwargs: ``torch.compile`` options (``backend``, ``mode``, ``fullgraph``,
                ``dynamic``, ...).

        Returns:
            The env itself.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(compile={"backend": "eager", "warmup": 1})
            >>> data, root = env.step_and_maybe_reset(env.rand_action(env.reset()))  # eager (warmup)
            >>> env.eager() is env
            True
        """
        if warmup is not None and (isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0):
            raise ValueError(f"warmup must be a non-negative int or None, got {warmup!r}")
        compiled = torch.compile(self._step_and_maybe_reset, **kwargs)
        if warmup:
            compiled = _Warmup(self._step_and_maybe_reset, compiled, warmup)
        self.__dict__["_compiled_step_and_maybe_reset"] = compiled
        return self

    def eager(self) -> "EnvBase":
        """Undoes :meth:`compile_step_and_maybe_reset`: ``step_and_maybe_reset`` runs eagerly
        again. Returns the env.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv().compile_step_and_maybe_reset(backend="eager")
            >>> env.eager().step_and_maybe_reset(env.rand_action(env.reset()))[1].batch_size
            torch.Size([])
        """
        self.__dict__.pop("_compiled_step_and_maybe_reset", None)
        return self

    @property
    def native_autoreset(self) -> bool:
        """Whether the env resets its finished rows inside its own ``_step`` (it returns the
        first observation of the next episode as the step's observation, as Isaac Lab and other
        vectorized simulators do). ``step_and_maybe_reset`` then runs no reset: it follows
        :func:`~gpusim.envs.episode.native_autoreset_step` (the finished rows' ``"next"``
        observations blanked, transforms told through ``_reset_on_native_autoreset``, done
        flags cleared). Settable; a ``TransformedEnv`` built on such an env inherits it.
        TorchRL's attribute name ``_torchrl_native_autoreset`` is the same flag.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv()
            >>> env.native_autoreset
            False
            >>> env._torchrl_native_autoreset = True
            >>> env.native_autoreset
            True
        """
        return self.__dict__.get("_native_autoreset", False)

    @native_autoreset.setter
    def native_autoreset(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError(f"native_autoreset must be a bool, got {type(value).__name__} {value!r}")
        self.__dict__["_native_autoreset"] = value

    _torchrl_native_autoreset = native_autoreset

    def _reset_on_native_autoreset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        """Hook of a native auto-reset (see :attr:`native_autoreset`): ``tensordict`` is the next
        root with the ``"_reset"`` entries of the finished rows, ``tensordict_reset`` a copy to
        update and return (its rows not reset are restored afterwards). Default: unchanged
        (the env already reset itself); ``TransformedEnv`` runs its transforms' hooks."""
        return tensordict_reset

    def _post_step_mdp(
        self, tensordict: TensorDictBase, tensordict_: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        """Hook run after ``step_mdp`` by ``step_and_maybe_reset`` and ``rollout`` when
        :attr:`_post_mdp_hook` is set (transformed envs whose transforms edit the stepped data
        or the next root there); default: nothing."""
        return tensordict, tensordict_

    def register_collector(self, collector: Any) -> None:
        """Registers the data collector that drives the env (held by a weak reference: the env
        does not keep the collector alive). Transforms read it through
        :attr:`Transform.collector <gpusim.transforms.Transform.collector>`.

        Args:
            collector: the collector object.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> class Collector:
            ...     pass
            >>> env, collector = CartPoleEnv(), Collector()
            >>> env.register_collector(collector)
            >>> env.collector is collector
            True
        """
        self.__dict__["_collector"] = weakref.ref(collector)

    @property
    def collector(self) -> Any:
        """The collector registered with :meth:`register_collector`, or ``None`` (none was, or
        it no longer exists).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv().collector is None
            True
        """
        ref = self.__dict__.get("_collector")
        return None if ref is None else ref()

    def _check_batched_worker(self) -> None:
        """Raises ``RuntimeError`` when this env cannot be the worker of a batched env (a
        transform that needs its own ``step_and_maybe_reset``); default: it can."""

    # ------------------------------------------------------------------ seeding
    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds the env and returns the next seed (deterministic function of ``seed``).

        Args:
            seed: the seed (``None``: unseeded).
            static_seed: return ``seed`` itself instead of the next seed.

        Returns:
            The next seed, for the next seeded object (``seed`` with ``static_seed``).

        Raises:
            TypeError: ``seed`` is neither an int nor ``None``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2])
            >>> next_seed = env.set_seed(0)
            >>> first = env.reset()["observation"]
            >>> _ = env.set_seed(0)
            >>> torch.equal(env.reset()["observation"], first), env.set_seed(0, static_seed=True)
            (True, 0)
        """
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
        """Writes a random action (from ``full_action_spec``) into ``tensordict``.

        A batch-unlocked env without batch dims draws one action per row of ``tensordict``.

        Args:
            tensordict: the data to write into (``None``: a new, empty tensordict).

        Returns:
            ``tensordict`` with the action entries.

        Examples:
            >>> from gpusim.envs.native import PendulumEnv
            >>> env = PendulumEnv(batch_size=[3])
            >>> action = env.rand_action()["action"]
            >>> action.shape, bool((action.abs() <= 2.0).all())  # inside the action spec
            (torch.Size([3, 1]), True)
        """
        if tensordict is None:
            tensordict = self._empty_td()
        elif self._rand_action_into(tensordict):
            return tensordict
        shape = ()
        if not self.batch_locked and not self.batch_size:
            shape = tensordict.batch_size
        tensordict.update(self.full_action_spec.rand(shape))
        return tensordict

    @_cached_plan
    def _rand_action_plan(self) -> tuple | None:
        """``(parents, leaves)`` of the action spec for :meth:`_rand_action_into`: the nested
        composites (key path, shape) and the leaves (parent index, name, spec) in the order
        ``Composite.rand`` draws them; ``None`` when a node is not a plain ``Composite`` or a leaf
        is not a plain tensor spec (lazy stacks, non-tensor, choice specs)."""
        from gpusim.specs import Choice, NonTensor, Stacked

        parents: list[tuple] = []
        leaves: list[tuple] = []
        device = self.device

        def walk(spec: Any, path: tuple) -> bool:
            if type(spec) is not Composite or spec.data_cls is not None:
                return False
            index = len(parents)
            parents.append((path, torch.Size(spec.shape)))
            for name, sub in spec._specs.items():
                if sub is None:
                    continue
                if isinstance(sub, Composite):
                    if not walk(sub, (*path, name)):
                        return False
                elif isinstance(sub, (Stacked, NonTensor, Choice)) or sub.device != device:
                    return False
                else:
                    leaves.append((index, name, sub))
            return True

        if not self.batch_locked and not self.batch_size:
            return None
        return (tuple(parents), tuple(leaves)) if walk(self.full_action_spec, ()) else None

    def _rand_action_into(self, tensordict: TensorDictBase) -> bool:
        """Writes a random action into a plain ``tensordict`` of the env's batch and device
        through the cached plan: the same draws, in the same order, as
        ``tensordict.update(full_action_spec.rand())``, without building a tensordict per step.
        ``False`` (nothing drawn) when the plan or ``tensordict`` does not allow it: a nested
        container is missing or is not a plain tensordict of the spec's shape."""
        plan = self._rand_action_plan
        if plan is None or not is_plain(tensordict) or tensordict.batch_size != self.batch_size:
            return False
        if tensordict.device is not None and tensordict.device != self.device:
            return False
        nodes = []
        for path, shape in plan[0]:
            node = tensordict
            for part in path:
                node = fast_get(node, part)
                if not is_plain(node):
                    return False
            if node.is_locked or node.batch_size != shape:
                return False
            nodes.append(node)
        prefix = torch.Size([])
        for index, name, spec in plan[1]:
            fast_set(nodes[index], name, spec.rand(prefix))
        return True

    def rand_step(self, tensordict: TensorDictBase | None = None) -> TensorDictBase:
        """A step with a random action.

        Args:
            tensordict: the root data. ``None``: as in TorchRL, an env that was reset before
                and reads nothing but its actions (an empty ``state_spec``: its state lives in
                the env) steps on from where it is, from an input holding the action only; an
                env never reset, or one that reads state entries from its input, is reset first.

        Returns:
            The stepped tensordict (output under ``"next"``).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> td = CartPoleEnv(batch_size=[2], seed=0).rand_step()
            >>> td["next", "reward"].flatten().tolist()
            [1.0, 1.0]
        """
        if tensordict is None:
            if self.state_keys or not self.__dict__.get("_was_reset", False):
                tensordict = self.reset()
            else:
                tensordict = TensorDict({}, batch_size=self.batch_size, device=self.device)
        return self.step(self.rand_action(tensordict))

    def fake_tensordict(self) -> TensorDictBase:
        """A zero-filled tensordict with the structure of one step (root + ``"next"``).

        :func:`~gpusim.envs.check_env_specs` compares it with real data.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> fake = CartPoleEnv(batch_size=[2]).fake_tensordict()
            >>> sorted(fake.keys()), sorted(fake["next"].keys())
            (['action', 'done', 'next', 'observation', 'state', 'terminated'], ['done', 'observation', 'reward', 'state', 'terminated'])
        """
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
        actions: Iterable[Any] | None = None,
        auto_reset: bool = True,
        auto_cast_to_device: bool = False,
        break_when_any_done: bool | None = None,
        break_when_all_done: bool | None = None,
        return_contiguous: bool | None = None,
        tensordict: TensorDictBase | None = None,
        set_truncated: bool = False,
        storing_device: torch.device | str | None = None,
        compile: bool | dict = False,
    ) -> TensorDictBase:
        """Runs ``max_steps`` steps with ``policy`` (random actions when ``None``).

        Args:
            max_steps: number of steps.
            policy: callable reading and writing a tensordict (a new tensordict it returns is
                merged into its input), or a ``torch.nn.Module`` that is not a tensordict
                module: it is called on the observation tensors and returns the action.
            callback: called as ``callback(env, tensordict)`` after each step.
            actions: pre-computed actions driving the rollout instead of ``policy`` (open-loop
                replay): each item is written under the env's top-level action key before its
                step. A sized iterable caps ``max_steps`` to its length; an iterator that runs
                out ends the rollout. Mutually exclusive with ``policy``.
            auto_reset: reset (``tensordict`` is passed to ``reset``) before the first step.
            auto_cast_to_device: move the policy output to the env device.
            break_when_any_done: stop after the step on which any env finished (default
                ``True`` unless ``break_when_all_done`` is set). Otherwise the envs that finish are
                reset, except after the last step (so that a rollout with ``auto_reset=False``
                can continue the run from ``env.step_mdp(out[..., -1])``).
            break_when_all_done: stop once every env has finished at least once; envs that are
                done are reset in between (non-stop mode is used).
            return_contiguous: stack into a contiguous tensordict (else a lazy stack). Default
                ``None``: contiguous unless a spec has a dynamic (``-1``) dim, whose steps may
                differ in shape; ``True`` with such specs raises.
            tensordict: initial data (required when ``auto_reset=False``; its rows that are
                done are reset first).
            set_truncated: mark the last step as truncated (requires a ``truncated`` entry).
            storing_device: the device of the returned data (default: the env's).
            compile: run ``policy + step_and_maybe_reset`` through ``torch.compile(fullgraph=True)``
                (a dict is forwarded to :meth:`compile`); non-stop rollouts only
                (``break_when_any_done=False``), without callback or ``set_truncated``. The
                compiled function is cached on the env for this policy. To continue where a
                compiled rollout ended, pass ``auto_reset=False,
                tensordict=env.compile(policy).last_root()`` (same options as ``compile``): the
                episodes go on, nothing is recompiled.

        Returns:
            A tensordict of shape ``[*batch_size, T]`` whose last dim is named ``"time"``.

        Raises:
            ValueError: a non-positive ``max_steps``, both break modes, ``auto_reset=False``
                without a tensordict, or ``compile`` with a stopping rollout.
            RuntimeError: ``set_truncated`` on an env without a ``truncated`` entry, or
                ``return_contiguous=True`` with dynamic specs.

        Examples:
            >>> import torch
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[4], seed=0)
            >>> td = env.rollout(1000)  # stops after the step on which any env finished
            >>> td.names, td.shape[1] < 1000, td["next", "done"][:, -1].any().item()
            ([None, 'time'], True, True)
            >>> push_right = lambda td: td.set("action", torch.ones(4, dtype=torch.long))
            >>> env.rollout(20, push_right, break_when_any_done=False).shape  # resets finished rows
            torch.Size([4, 20])

            Compiled (``torch.compile`` takes tens of seconds on a CPU, hence skipped here):

            >>> env.rollout(20, break_when_any_done=False, compile=True).shape  # doctest: +SKIP
            torch.Size([4, 20])
        """
        max_steps = positive_int(max_steps, "max_steps")
        if return_contiguous is None:
            return_contiguous = not self._has_dynamic_specs
        elif return_contiguous and self._has_dynamic_specs:
            raise RuntimeError(
                "The environment specs are dynamic. Call rollout with return_contiguous=False "
                "(or None, the default): a spec has a -1 dim, so the steps may differ in shape."
            )
        if actions is not None:
            if policy is not None:
                raise ValueError("rollout got both `policy` and `actions`: pass one of them")
            if hasattr(actions, "__len__"):
                if len(actions) == 0:
                    raise ValueError("rollout(actions=...) got an empty sequence of actions")
                max_steps = min(max_steps, len(actions))
            policy = _ActionReplay(actions, next(iter(self.full_action_spec.keys())))
        if break_when_any_done is None:
            break_when_any_done = not break_when_all_done
        if break_when_any_done and break_when_all_done:
            raise ValueError("break_when_any_done and break_when_all_done cannot both be True")
        if compile:
            bad = {
                "break_when_any_done=True": break_when_any_done,
                "break_when_all_done=True": bool(break_when_all_done),
                "callback": callback is not None,
                "set_truncated": set_truncated,
                "actions": actions is not None,
                "storing_device": storing_device is not None,
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
        if set_truncated and not any(_keys.as_tuple(k)[-1] == "truncated" for k in self.done_keys):
            raise RuntimeError(
                "rollout: set_truncated was set to True but the done spec has no 'truncated' entry "
                f"(done keys {self.done_keys}); add them with env.add_truncated_keys()"
            )
        if auto_reset:
            tensordict = self.reset(tensordict)
        elif tensordict is None:
            raise ValueError("rollout(auto_reset=False) needs an initial tensordict")
        else:  # continuing from earlier data: rows that ended start a new episode first
            tensordict = self.maybe_reset(tensordict)
        policy = self.rand_action if policy is None else _policy.rollout_policy(self, policy)
        steps: list[TensorDictBase] = []
        seen_done = None
        for i in range(max_steps):
            try:
                tensordict = policy(tensordict)
            except _ActionsExhausted:
                if not steps:
                    raise ValueError("rollout(actions=...) got an iterator that yields no action") from None
                break
            if auto_cast_to_device and tensordict.device != self.device:
                tensordict = tensordict.to(self.device)
            last = i == max_steps - 1
            if break_when_any_done:
                tensordict = self.step(tensordict)
                if set_truncated and last:
                    self._set_truncated(tensordict.get("next"))
                root = None
                if self._post_mdp_hook:  # the hook edits the recorded step before it is stored
                    tensordict, root = self._post_step_mdp(tensordict, self._step_mdp(tensordict))
                steps.append(tensordict)
                if callback is not None:
                    callback(self, tensordict)
                if last or bool(self._episode_for(tensordict).ended(tensordict.get("next")).any()):
                    break
                tensordict = self._step_mdp(tensordict) if root is None else root
            else:
                if last:  # no reset after the last step: a later rollout can continue the run
                    tensordict = self.step(tensordict)
                    if set_truncated:
                        self._set_truncated(tensordict.get("next"))
                    if self._post_mdp_hook:
                        tensordict, _ = self._post_step_mdp(tensordict, self._step_mdp(tensordict))
                    steps.append(tensordict)
                    if callback is not None:
                        callback(self, tensordict)
                    break
                stepped, tensordict = self.step_and_maybe_reset(tensordict)
                steps.append(stepped)
                if callback is not None:
                    callback(self, stepped)
                if break_when_all_done:
                    done_now = self._episode_for(stepped).ended(stepped.get("next"))
                    seen_done = done_now if seen_done is None else seen_done | done_now
                    if bool(seen_done.all()):
                        break
        out = self._stack_steps(steps, return_contiguous)
        if storing_device is not None and out.device != torch.device(storing_device):
            out = out.to(storing_device)
        return out

    def _stack_steps(self, steps: list[TensorDictBase], return_contiguous: bool) -> TensorDictBase:
        # (rollout resolves its ``None`` default from the specs before it gets here)
        # the data's batch dims: a batch-unlocked env may run on data with more than its own
        dim = steps[0].batch_dims if steps else len(self.batch_size)
        if return_contiguous:
            try:
                out = stack_steps(steps, dim)
            except RuntimeError as err:
                if "are exclusive" not in str(err):
                    raise
                # some steps hold entries that others lack (e.g. a reward written by ``_reset``
                # in the first root): kept, as a lazy stack with those entries exclusive
                try:
                    out = LazyStackedTensorDict.maybe_dense_stack(steps, dim)
                except RuntimeError:
                    raise err from None  # (steps a lazy stack cannot hold either: the key error)
        else:
            out = LazyStackedTensorDict.lazy_stack(steps, dim)
        try:
            out.names = [None] * dim + ["time"]
        except Exception:  # lazy stacks of heterogeneous data may not support names
            pass
        return out

    def add_truncated_keys(self) -> "EnvBase":
        """Adds a ``truncated`` entry beside every ``done`` entry of the done spec (``False``
        unless the env or a transform writes it); returns the env.

        Examples:
            >>> from gpusim import CartPoleEnv
            >>> env = CartPoleEnv().add_truncated_keys()
            >>> env.rollout(3, set_truncated=True, break_when_any_done=False)["next", "truncated"][-1].item()
            True
        """
        done = self.full_done_spec.clone()
        done.unlock_()
        for key in self.done_keys:
            tkey = _keys.as_tuple(key)
            if tkey[-1] == "done":
                done[_keys.join(tkey[:-1], "truncated")] = done[key].clone()
        self.full_done_spec = done
        return self

    def _set_truncated(self, next_td: TensorDictBase) -> None:
        for level in self.done_levels:
            node = next_td if level.prefix == () else next_td.get(level.prefix)
            trunc = node.get("truncated", None)
            if trunc is None:
                continue
            node.set("truncated", torch.ones_like(trunc))
            node.set("done", torch.ones_like(node.get("done")))

    def compile(self, policy: Callable[[TensorDictBase], TensorDictBase] | None = None, **kwargs: Any) -> "CompiledRollout":
        """A compiled ``policy + step_and_maybe_reset`` loop, cached per policy and options.

        The returned :class:`~gpusim.envs.compiled.CompiledRollout` is called as
        ``runner(max_steps)`` for a ``[*B, T]`` rollout, ``runner.run(max_steps, root)`` for
        ``(data, next_root)`` (continue by passing ``next_root`` back), or ``runner.step(td)``
        for one compiled step. Keyword arguments are those of ``CompiledRollout``
        (``steps_per_call``, ``mode``, ``verbose``, ``torch.compile`` options). Nothing is
        compiled until the runner is first called.

        Args:
            policy: callable reading and writing a tensordict (``None``: random actions).
            **kwargs: ``CompiledRollout`` options.

        Returns:
            The cached :class:`~gpusim.envs.compiled.CompiledRollout` for this policy and options.

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
    def to(self, *args: Any, **kwargs: Any) -> "EnvBase":
        """Moves the env (specs and buffers) to a device.

        Args:
            *args: a device (or ``torch.nn.Module.to`` arguments).
            **kwargs: ``device=...`` (or ``torch.nn.Module.to`` keyword arguments).

        Returns:
            ``self``.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2]).to("cpu")
            >>> env.device, env.full_action_spec.device
            (device(type='cpu'), device(type='cpu'))
        """
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

    def close(self, *, raise_if_closed: bool = False) -> None:
        """Releases the env's resources (worker processes, simulators; nothing for native envs).

        Closing a closed env does nothing.

        Args:
            raise_if_closed: raise a ``RuntimeError`` instead when the env is already closed.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv()
            >>> env.close()
            >>> env.is_closed
            True
        """
        if raise_if_closed and self.is_closed:
            raise RuntimeError(f"{type(self).__name__}.close: the env is already closed")
        self.__dict__["_closed"] = True

    def auto_specs_(
        self,
        policy: Callable[[TensorDictBase], TensorDictBase],
        *,
        tensordict: TensorDictBase | None = None,
        action_key: NestedKey | list[NestedKey] = "action",
        done_key: NestedKey | list[NestedKey] | None = None,
        observation_key: NestedKey | list[NestedKey] = "observation",
        reward_key: NestedKey | list[NestedKey] = "reward",
    ) -> "EnvBase":
        """Sets the env's specs from two steps of its ``_reset``/``_step`` hooks driven by
        ``policy``; returns the env.

        Every leaf gets an ``Unbounded`` spec of its shape and dtype (a dim that differs between
        the two steps becomes dynamic, ``-1``), a non-tensor leaf a ``NonTensor`` spec. The
        named entries make the action, done, reward and observation specs; root inputs that are
        neither an action nor an output make the state spec.

        Args:
            policy: writes the action(s) into the tensordict it receives.

        Keyword Args:
            tensordict: the first root data (default: ``_reset``'s output).
            action_key: the action entries.
            done_key: the done entries (default: those of ``done``, ``terminated``,
                ``truncated`` that the step writes).
            observation_key: the observation entries.
            reward_key: the reward entries.

        Raises:
            RuntimeError: a step output entry that none of the keys names.

        Examples:
            >>> import torch
            >>> from gpusim.envs.native import PendulumEnv
            >>> env = PendulumEnv()
            >>> policy = lambda td: td.set("action", torch.zeros(1))
            >>> env = env.auto_specs_(policy, observation_key=["observation", "state"])
            >>> env.observation_spec["observation"].shape, type(env.action_spec).__name__
            (torch.Size([3]), 'Unbounded')
            >>> env.rollout(3, policy).shape
            torch.Size([3])
        """
        from gpusim.envs._auto_specs import auto_specs

        return auto_specs(self, policy, tensordict, action_key, done_key, observation_key, reward_key)

    def check_env_specs(self, *args: Any, **kwargs: Any) -> None:
        """:func:`~gpusim.envs.checks.check_env_specs` on this env (same arguments).

        Runs a short rollout and checks that its data matches the env's specs; raises an
        ``AssertionError`` naming the key that does not.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv(batch_size=[4], seed=0).check_env_specs()  # silent when it passes
        """
        from gpusim.envs.checks import check_env_specs

        check_env_specs(self, *args, **kwargs)

    def append_transform(self, transform: Any) -> "EnvBase":
        """A :class:`~gpusim.transforms.TransformedEnv` of this env with ``transform`` appended.

        Args:
            transform: a :class:`~gpusim.transforms.Transform`.

        Examples:
            >>> from gpusim import CartPoleEnv, StepCounter
            >>> env = CartPoleEnv().append_transform(StepCounter())
            >>> "step_count" in env.observation_spec.keys()
            True
        """
        return _hook("TransformedEnv")(self, transform)

    def __iter__(self) -> Iterator[TensorDictBase]:
        raise TypeError(f"{type(self).__name__} is not iterable; use rollout()")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(\n    batch_size={list(self.batch_size)},\n    device={self.device},\n"
            f"    observation_keys={self.observation_keys},\n    action_keys={self.action_keys},\n"
            f"    reward_keys={self.reward_keys},\n    done_keys={self.done_keys})"
        )


class BatchSizeError(ValueError, RuntimeError):
    """A tensordict whose batch size the env does not take (a ``ValueError``, and a
    ``RuntimeError`` as TorchRL raises)."""


class _ActionsExhausted(Exception):
    """Raised by :class:`_ActionReplay` when its iterator runs out (ends the rollout)."""


class _ActionReplay:
    """The policy of ``rollout(actions=...)``: writes the next item under ``key``."""

    def __init__(self, actions: Iterable[Any], key: NestedKey) -> None:
        self.iterator = iter(actions)
        self.key = key

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        try:
            action = next(self.iterator)
        except StopIteration:
            raise _ActionsExhausted from None
        return tensordict.set(self.key, action)


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
    setattr(EnvBase, f"{_name}_unbatched", _unbatched_property(_name))
del _name
