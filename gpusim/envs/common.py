"""``EnvBase``: the batched environment base class.

An environment author writes the specs, ``_reset``, ``_step`` and ``_set_seed``; the base class
owns the episode machinery: done completion, partial resets through ``"_reset"``, ``step``,
``step_and_maybe_reset``, ``rollout``, seeding and spec bookkeeping. Key plans are computed once,
when the specs are locked, never per step.

The class is assembled by concept: this module holds construction, ``reset``/``step`` and the
hooks; :mod:`~gpusim.envs.pipeline` runs ``step_and_maybe_reset`` and the eager loop;
:mod:`~gpusim.envs.env_specs` the specs; :mod:`~gpusim.envs.key_plans` the key lists and the
episode plan; :mod:`~gpusim.envs._boundary` the step boundary checks; :mod:`~gpusim.envs.sampling` seeding and random actions;
:mod:`~gpusim.envs.rollout` rollouts and compiled loops.

``nn.Module`` routes attribute writes through its ``__setattr__`` (slow, and it files tensors and
modules apart) and misses through ``__getattr__`` (which ``TransformedEnv`` and batched envs
forward to their base env or workers). The env's own bookkeeping slots (``_spec_locked``,
``_native_autoreset``, ``_collector``, ...) are therefore read and written in ``__dict__``
directly; each such access says so.

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
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase
from torch import nn

from gpusim.envs import _edits, _keys, _partial
from gpusim.envs._action_guard import guarded_step, plan_guards
from gpusim.envs._boundary import StepBoundary
from gpusim.envs._fasttd import fast_get, fast_pop, fast_set
from gpusim.envs._keys import NestedKey
from gpusim.envs._step_inputs import not_a_tensordict
from gpusim.envs.env_specs import EnvSpecs, _as_size, _cached_plan
from gpusim.envs.episode import AutoResetMode, ResetMasks, resolve_set_state
from gpusim.envs.key_plans import KeyPlans
from gpusim.envs.pipeline import StepPipeline
from gpusim.envs.rollout import RolloutMixin
from gpusim.envs.sampling import EnvSampling
from gpusim.envs.utils import StepMDP
from gpusim.specs import Categorical, Composite, Unbounded

if TYPE_CHECKING:
    from gpusim.envs._step_mdp import StepMDPPlan

__all__ = ["EnvBase"]


class _EnvPostInit(abc.ABCMeta):
    """Runs :meth:`EnvBase._post_init` (spec completion and locking) after ``__init__``."""

    def __call__(cls, *args, **kwargs):
        redirect = cls.__dict__.get("_redirect_construction")  # the class's own, not inherited
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
            instance.__dict__["_spec_locked"] = bool(spec_locked)  # nn.Module slot (see the module docstring)
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


#: What the transforms layer gives the envs (the envs never import it): ``"TransformedEnv"``
#: (for ``append_transform``) and ``"auto_reset"`` (``env -> wrapped env``, for
#: ``auto_reset=True``), registered by :mod:`gpusim.transforms` when it is imported.
TRANSFORM_HOOKS: dict[str, Callable[..., Any]] = {}


def _hook(name: str) -> Callable[..., Any]:
    hook = TRANSFORM_HOOKS.get(name)
    if hook is None:  # pragma: no cover - gpusim/__init__ always imports the transforms
        raise RuntimeError(f"{name} needs gpusim.transforms: import gpusim (or gpusim.transforms) first")
    return hook


def _as_device(device) -> torch.device:
    device = torch.device("cpu") if device is None else torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            f"device={str(device)!r} was requested but CUDA is not available on this machine "
            "(torch.cuda.is_available() is False); use device='cpu'"
        )
    return device


def _is_saved_state(env: Any, tensordict: TensorDictBase | None) -> bool:
    """Whether ``tensordict`` is a state of ``env.get_state()`` that ``env.set_state`` restores."""
    if tensordict is None or not callable(getattr(env, "set_state", None)):
        return False
    keys = tensordict.keys()
    return "data" in keys and "rng" in keys


class EnvBase(EnvSpecs, KeyPlans, StepBoundary, EnvSampling, RolloutMixin, nn.Module, metaclass=_EnvPostInit):
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
    * ``_step_rows(tensordict, mask) -> next``: a partial step (a ``"_step"`` entry selecting
      some rows); see :mod:`gpusim.envs._partial`.
    * ``_post_step_mdp(stepped, next_root) -> (stepped, next_root)``, run by the step pipeline
      after ``step_mdp`` when the ``_post_mdp_hook`` flag is set (``TransformedEnv`` sets both
      from its transforms), and ``_reset_on_native_autoreset(tensordict, tensordict_reset)``,
      run by the pipeline's native auto-reset (see :attr:`native_autoreset`).
    * ``_input_checks``: the planned step-boundary checks (action leaves, required state keys);
      ``TransformedEnv`` overrides it.
    * ``maybe_reset``: an env that never resets (imagination) may override it; the pipeline
      then calls it instead of its planned reset strategy.
    * :attr:`ends_episodes`: ``False`` for an env none of whose rows can end after a step (no
      termination, no horizon); the pipeline then plans no auto-reset.
    * Read-only key plans that helper modules and containers read (cached at spec lock,
      :mod:`gpusim.envs.key_plans`): ``_echo_state_keys`` (the state keys a step copies into
      ``"next"``) and ``_has_dynamic_specs`` (TorchRL's name: a spec has a ``-1`` dim).

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

    def __new__(cls, *args: Any, _inplace_update: bool = False, _batch_locked: bool = True, **kwargs: Any) -> EnvBase:
        """Creates the env with default state, so that attributes and specs can be set before
        ``super().__init__()`` runs; constructor arguments are accepted (and left to
        ``__init__``). Specs set on the class (``cls._input_spec``/``cls._output_spec``, as
        TorchRL's mock envs do) move to the instance."""
        env = super().__new__(cls)
        nn.Module.__init__(env)
        d = env.__dict__  # nn.Module slot (see the module docstring)
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
            if isinstance(cls.__dict__.get(name), Composite):  # set on this very class
                spec = cls.__dict__[name].clone()
                delattr(cls, name)
            if spec is None:
                spec = Composite({part: Composite(shape=()) for part in parts}, shape=())
            d[name] = spec
        return env

    def __setattr__(self, name: str, value: Any) -> None:
        _edits.edited()  # read by compiled steps that run past Dynamo's guards (gpusim.envs._edits)
        super().__setattr__(name, value)

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
        d = self.__dict__  # nn.Module slot (see the module docstring)
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
        d["_auto_reset_mode"] = None if auto_reset_mode is None else AutoResetMode.parse(auto_reset_mode, self._device)
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
        return self.__dict__.get("_batch_locked", True)  # nn.Module slot (see the module docstring)

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
        mode = self.__dict__.get("_auto_reset_mode")  # nn.Module slot (see the module docstring)
        return AutoResetMode.parse(mode, self.device)

    def _sparse_now(self) -> bool:
        """Whether this call may read reset rows on the host (``SPARSE`` mode, not compiling)."""
        return self.step_pipeline.sparse_now()

    # ------------------------------------------------------------------ construction
    def _post_init(self) -> None:
        B = self.batch_size
        full_reward = self.output_spec["full_reward_spec"]
        if len(full_reward.keys()) == 0:
            self._set_full(
                "full_reward_spec",
                Composite(reward=Unbounded((*B, 1), device=self.device), shape=B, device=self.device),
            )
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

    @_cached_plan
    def step_pipeline(self) -> StepPipeline:
        """The env's :class:`~gpusim.envs.pipeline.StepPipeline` (``step → step_mdp →
        post-step_mdp hook → reset``, its reset strategy chosen once), planned from the locked
        specs and planned again when they, the transform chain, :attr:`native_autoreset` or
        :meth:`compile_step_and_maybe_reset` change.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = CartPoleEnv(batch_size=[2], auto_reset_mode="masked")
            >>> env.step_pipeline.strategy, env.step_pipeline is env.step_pipeline
            ('masked', True)
        """
        return StepPipeline(self)

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
                ``state_spec``), for envs whose class sets ``_supports_set_state = True``; on an
                env with ``get_state``/``set_state`` (the native envs, through transforms), a
                state of ``get_state()`` is restored as ``set_state(tensordict)`` does;
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
        self.__dict__["_was_reset"] = True  # nn.Module slot (see the module docstring)
        if set_state is True and _is_saved_state(self, tensordict):  # a state of get_state(): restore it
            return self._note_root(self.set_state(tensordict))
        supported = self._supports_set_state
        if supported or set_state is not None:
            has_state = supported and set_state is None and self._input_td_has_state(tensordict)
            set_state = resolve_set_state(set_state, supported, has_state, type(self).__name__)
            if set_state is not None:
                kwargs["set_state"] = set_state
        pipeline = self.step_pipeline
        masks = pipeline.episode_for(tensordict).resolve(tensordict, pipeline.sparse_now())
        return self._note_root(pipeline.reset_rows(tensordict, masks, **kwargs))

    def _note_root(self, root: Any) -> Any:
        """Remembers the root data the env's last public call returned (``reset``, ``step``'s
        ``"next"``, ``maybe_reset``, ``step_and_maybe_reset``, ``rollout``): a reference, no copy,
        eager calls only. ``get_state()`` without data saves it. ``root`` may be a callable
        returning it (a compiled rollout's last root, built on demand). Returns ``root``."""
        if not torch.compiler.is_compiling():
            self.__dict__["_last_public_root"] = root  # nn.Module slot (see the module docstring)
        return root

    def _current_root(self) -> TensorDictBase:
        """The root data the env's last public call returned (see :meth:`_note_root`).

        Raises:
            RuntimeError: no call returned data yet (reset the env first, or pass the data).
        """
        root = self.__dict__.get("_last_public_root")
        if root is None:
            raise RuntimeError(
                f"{type(self).__name__}: no data yet: reset the env first, or pass the root data you hold "
                "(get_state(td))"
            )
        return root() if callable(root) and not isinstance(root, TensorDictBase) else root

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
            out = fast_set(tensordict, "next", self._step_output(tensordict))
            self._note_root(fast_get(out, "next"))
            return out
        next_td = _partial.step_partial(
            self,
            partial,
            tensordict.batch_size,
            every=lambda: self._step_output(tensordict),
            some=lambda mask: self._step_rows(tensordict, mask),
            none=lambda: _partial.skip_next(self, tensordict, clone=True),
        )
        self._note_root(next_td)
        return fast_set(tensordict, "next", next_td)

    def _step_rows(self, tensordict: TensorDictBase, mask: torch.Tensor) -> TensorDictBase:
        """Hook: the complete ``"next"`` data of a partial step, ``mask`` (bool, the input's batch
        shape) selecting the rows to step; the skipped rows hold
        :func:`~gpusim.envs._partial.skip_next` data. Default: a functional env steps every row
        and keeps the selected ones; a batch-unlocked env without batch dims steps the selected
        rows; other envs raise. Batched envs step the selected workers only."""
        return _partial.step_selected_rows(self, tensordict, mask)

    def _step_mdp(self, tensordict: TensorDictBase) -> TensorDictBase:
        """``step_mdp`` of the step loop (actions and rewards dropped): the pipeline's plan."""
        return self.step_pipeline.step_mdp(tensordict)

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
        return self._note_root(self.step_pipeline.reset_done(tensordict))

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
        out, root = self.step_pipeline.run_step(tensordict)  # eager, or compile_step_and_maybe_reset's
        self._note_root(root)
        return out, root

    def _step_and_maybe_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        """The eager ``step_and_maybe_reset`` (what :meth:`compile_step_and_maybe_reset` compiles)."""
        return self.step_pipeline.step_and_maybe_reset(tensordict)

    @property
    def ends_episodes(self) -> bool:
        """Whether a step can end a row's episode (``True`` unless an env says otherwise).

        An env whose steps never set ``done`` (e.g. an MPE scenario without ``max_steps``)
        returns ``False``: :class:`~gpusim.envs.pipeline.StepPipeline` then plans no auto-reset
        after its steps, which would otherwise compute every row's reset under an all-false
        mask in a compiled graph (MPE simple_spread, 8192 envs: a fifth of the graph's time in
        the merge). Explicit ``reset`` calls, partial ones included, work as ever. A
        ``TransformedEnv`` keeps the default (a transform may end episodes).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv().ends_episodes
            True
        """
        return True

    @property
    def native_autoreset(self) -> bool:
        """Whether the env resets its finished rows inside its own ``_step`` (it returns the
        first observation of the next episode as the step's observation, as Isaac Lab and other
        vectorized simulators do). ``step_and_maybe_reset`` then runs no reset: it follows
        the ``native`` strategy of :mod:`gpusim.envs.pipeline` (the finished rows' ``"next"``
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
        return self.__dict__.get("_native_autoreset", False)  # nn.Module slot (see the module docstring)

    @native_autoreset.setter
    def native_autoreset(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError(f"native_autoreset must be a bool, got {type(value).__name__} {value!r}")
        self.__dict__["_native_autoreset"] = value  # nn.Module slot (see the module docstring)
        self._cache.pop("step_pipeline", None)  # another reset strategy
        _edits.edited()

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
        self.__dict__["_collector"] = weakref.ref(collector)  # nn.Module slot (see the module docstring)

    @property
    def collector(self) -> Any:
        """The collector registered with :meth:`register_collector`, or ``None`` (none was, or
        it no longer exists).

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> CartPoleEnv().collector is None
            True
        """
        ref = self.__dict__.get("_collector")  # nn.Module slot (see the module docstring)
        return None if ref is None else ref()

    def _check_batched_worker(self) -> None:
        """Raises ``RuntimeError`` when this env cannot be the worker of a batched env (a
        transform that needs its own ``step_and_maybe_reset``); default: it can."""

    # ------------------------------------------------------------------ misc
    def to(self, *args: Any, **kwargs: Any) -> EnvBase:
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
                self.__dict__["_input_spec"] = self._input_spec.to(device)  # nn.Module slot (see the module docstring)
                self.__dict__["_output_spec"] = self._output_spec.to(
                    device
                )  # nn.Module slot (see the module docstring)

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
        self.__dict__["_closed"] = True  # nn.Module slot (see the module docstring)

    def auto_specs_(
        self,
        policy: Callable[[TensorDictBase], TensorDictBase],
        *,
        tensordict: TensorDictBase | None = None,
        action_key: NestedKey | list[NestedKey] = "action",
        done_key: NestedKey | list[NestedKey] | None = None,
        observation_key: NestedKey | list[NestedKey] = "observation",
        reward_key: NestedKey | list[NestedKey] = "reward",
    ) -> EnvBase:
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

    def append_transform(self, transform: Any) -> EnvBase:
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
