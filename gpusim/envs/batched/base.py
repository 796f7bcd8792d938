"""``BatchedEnvBase``: the shared machinery of ``SerialEnv`` and ``ParallelEnv``.

A batched env stacks ``num_workers`` envs (each of batch ``sub_batch``) into one env of batch
``[num_workers, *sub_batch]`` with the ordinary :class:`~gpusim.envs.common.EnvBase` interface.
Its specs are the worker specs expanded with ``num_workers`` in front, taken from the workers'
metadata at construction (one env per distinct factory is built, read and closed); the workers
themselves start lazily, on first use.

Partial resets: the resolved masks (:class:`~gpusim.envs.episode.ResetMasks`, one per done
level, ``[num_workers, *sub_batch]``) select rows; only the workers with a selected row are
reset, and they receive their rows of the masks, so a worker with a sub-batch resets only the
selected rows. The episode merge then keeps the previous data of the rows not reset.

Examples:
    >>> from gpusim.envs.batched import SerialEnv
    >>> from gpusim.envs.native import PendulumEnv
    >>> env = SerialEnv(2, PendulumEnv, {"g": 9.81})
    >>> env.batch_size
    torch.Size([2])
    >>> env.g
    [9.81, 9.81]
    >>> env.rollout(3)["next", "reward"].shape
    torch.Size([2, 3, 1])
"""

from __future__ import annotations

import abc
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import LazyStackedTensorDict, NonTensorStack, TensorDict, TensorDictBase

from gpusim.envs import _partial
from gpusim.envs.batched import _views
from gpusim.envs.batched._shared import KeyPlan, TDBuilder, copy_leaves, maybe_leaves
from gpusim.envs.batched.metadata import EnvMetaData, get_env_metadata
from gpusim.envs.common import EnvBase
from gpusim.envs.episode import AutoResetMode, ResetMasks, merge_rows

__all__ = ["BatchedEnvBase", "WorkerValues"]

_SPEC_PARTS = (
    ("input_spec", "full_action_spec"),
    ("input_spec", "full_state_spec"),
    ("output_spec", "full_observation_spec"),
    ("output_spec", "full_reward_spec"),
    ("output_spec", "full_done_spec"),
)


class ConfigurationError(ValueError, RuntimeError):
    """A batched env built with inconsistent arguments (a ``ValueError``, and a
    ``RuntimeError`` as TorchRL raises)."""


def _as_list(value: Any, n: int, what: str, check: Callable[[Any], bool], expected: str) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ConfigurationError(
                f"len({what}) and num_workers mismatch: {what} has {len(value)} entries but num_workers is {n}"
            )
        items = list(value)
    else:
        items = [value] * n
    for i, item in enumerate(items):
        if not check(item):
            raise TypeError(f"{what}[{i}] must be {expected}, got {type(item).__name__}")
    return items


def _bounds_only(a: Any, b: Any) -> bool:
    """Whether two leaf specs differ at most in their bounds (same Bounded class, shape, dtype
    and device): workers may differ so, e.g. step counters of different horizons."""
    from gpusim.specs import Bounded

    return (
        type(a) is type(b)
        and isinstance(a, Bounded)
        and a.shape == b.shape
        and a.dtype == b.dtype
        and a.device == b.device
    )


def _spec_difference(a: EnvMetaData, b: EnvMetaData) -> str | None:
    if a.batch_size != b.batch_size:
        return f"batch_size {list(b.batch_size)} vs {list(a.batch_size)}"
    if a.device != b.device:
        return f"device {b.device} vs {a.device}"
    for parent, name in _SPEC_PARTS:
        sa, sb = a.specs[parent, name], b.specs[parent, name]
        if sa != sb:
            keys_a, keys_b = set(sa.keys(True, True)), set(sb.keys(True, True))
            if keys_a != keys_b:
                return f"{name} keys {sorted(map(str, keys_b))} vs {sorted(map(str, keys_a))}"
            tolerated = False
            for key in sa.keys(True, True):
                if sa[key] != sb[key]:
                    if _bounds_only(sa[key], sb[key]):  # each worker's bounds are kept
                        tolerated = True
                        continue
                    if not _same_but_example(sa[key], sb[key]):
                        return f"{name}[{key!r}]: {sb[key]} vs {sa[key]}"
                    tolerated = True
            if not tolerated:
                return name
    return None


def _same_but_example(a: Any, b: Any) -> bool:
    """Two ``NonTensor`` specs that differ only by their ``example_data`` (an illustration of the
    values, not a constraint: workers may carry different strings, e.g. per-task instructions)."""
    from gpusim.specs import NonTensor, TensorSpec

    return isinstance(a, NonTensor) and isinstance(b, NonTensor) and TensorSpec.__eq__(a, b)


def _has_data_cls(spec: Any) -> bool:
    """Whether a nested Composite of ``spec`` has a ``data_cls`` (a tensorclass entry)."""
    from gpusim.specs import Composite

    for value in spec.values():
        if isinstance(value, Composite) and (value.data_cls is not None or _has_data_cls(value)):
            return True
    return False


def _stack_worker_bounds(specs: Any, metas: list[EnvMetaData]) -> None:
    """Writes into ``specs`` (the batched env's ``Composite(input_spec=..., output_spec=...)``)
    the bounds of every worker for the Bounded leaves whose bounds differ between workers."""
    first = metas[0]
    for parent, name in _SPEC_PARTS:
        part = first.specs[parent, name]
        for key in part.keys(True, True):
            leaves = [m.specs[parent, name][key] for m in metas]
            if all(leaf == leaves[0] for leaf in leaves[1:]):
                continue
            if not all(_bounds_only(leaves[0], leaf) for leaf in leaves[1:]):
                continue  # other tolerated differences (a NonTensor's example) keep the first spec
            spec = leaves[0]
            low = torch.stack([torch.as_tensor(leaf.low).expand(leaf.shape) for leaf in leaves], 0)
            high = torch.stack([torch.as_tensor(leaf.high).expand(leaf.shape) for leaf in leaves], 0)
            full = (parent, name, *(key if isinstance(key, tuple) else (key,)))
            target = specs[full]
            specs[full] = type(spec)(
                low.to(target.device),
                high.to(target.device),
                shape=target.shape,
                dtype=spec.dtype,
                device=target.device,
                domain=spec.domain,
            )


class WorkerValues(list):
    """The values of an attribute on every worker (a list, in worker order); attributes of the
    values are read on the workers too: ``env.nested.value`` is ``[w.nested.value for w in
    workers]``, and ``env.nested.method()`` calls the method on every worker.

    Examples:
        >>> from gpusim.envs.batched import SerialEnv
        >>> from gpusim.envs.native import CartPoleEnv
        >>> env = SerialEnv(2, CartPoleEnv)
        >>> values = env.gravity  # an attribute of the worker envs, not of SerialEnv
        >>> type(values).__name__, values
        ('WorkerValues', [9.8, 9.8])
        >>> env.gravity.is_integer()  # a method of the values, called on every worker
        [False, False]
        >>> env.close()
    """

    def __init__(self, env: BatchedEnvBase, path: str | tuple, values: list) -> None:
        super().__init__(values)
        self._env = env
        self._path = (path,) if isinstance(path, str) else tuple(path)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._env._worker_attribute((*self._path, name))


class BatchedEnvBase(EnvBase):
    """Base of the batched envs: specs from metadata, partial resets, seeds, worker attributes.

    Args:
        num_workers: number of worker envs.
        create_env_fn: a callable returning an ``EnvBase`` (an
            :class:`~gpusim.envs.batched.EnvCreator`, a class, a lambda), or a list of
            ``num_workers`` of them ("mixed environments": their specs must be equal).
        create_env_kwargs: keyword arguments for the factory, or a list with one dict per worker.

    Keyword Args:
        device: the device of the batched env's data (default: the workers' device). Outputs are
            moved there in one transfer per step.
        pin_memory: stage device transfers through pinned memory (CUDA only).
        non_blocking: make the device transfers non-blocking.
        num_threads: torch threads of the main process once the workers start (``None``: keep).
        num_sub_threads: torch threads of each worker (default 1).
        use_buffers: exchange data through preallocated buffers built from the specs
            (``True``), or send each step's tensordicts as they are (``False``: needed for
            data whose shape changes, slower). ``None`` (default): buffers unless the specs
            hold non-tensor entries. With buffers, non-tensor entries travel with the commands.
        shared_memory: place the buffers in shared memory (``ParallelEnv`` needs shared or
            memory-mapped buffers; without either, it exchanges data without buffers).
        memmap: place the buffers in memory-mapped files instead (exclusive with
            ``shared_memory``).
        share_individual_td: return lazy stacks of the workers' tensordicts instead of
            dense tensordicts (``None``: dense).
        consolidate: accepted for TorchRL compatibility (TorchRL's transfer optimisation
            without buffers); gpusim pickles the tensordicts as they are.
        serial_for_single: ``ParallelEnv(1, ..., serial_for_single=True)`` builds a
            ``SerialEnv`` instead (no worker process for a single env); no effect otherwise.
        metadata_from_workers: read the specs from the live worker envs, built (and started)
            at construction, instead of from an env built in this process and closed: for envs
            that must not be built twice or here. The worker specs must agree. Needs
            ``use_buffers=False`` (buffers are allocated before the workers exist).

    Attribute access: names the batched env does not have are looked up on the workers and
    return one value per worker (``env.g -> [9.81, 9.81]``); methods return a callable that
    calls every worker and returns the list of results.

    Raises:
        ValueError: a non-positive ``num_workers``, lists of the wrong length, or mixed
            factories whose specs differ.
        TypeError: a factory that is not callable.

    Examples:
        >>> import torch
        >>> from gpusim.envs.batched import SerialEnv
        >>> from gpusim.envs.native import CartPoleEnv
        >>> env = SerialEnv(2, CartPoleEnv, {"batch_size": [3]})  # 2 workers of 3 envs each
        >>> env.batch_size, env.is_started  # the workers start on first use
        (torch.Size([2, 3]), False)
        >>> td = env.reset()
        >>> before = td["state"].clone()
        >>> reset = torch.zeros(2, 3, 1, dtype=torch.bool)
        >>> reset[1, 2] = True  # one env of worker 1
        >>> td = env.reset(td.set("_reset", reset))
        >>> (td["state"] != before).any(-1).tolist()
        [[False, False, False], [False, False, True]]
        >>> env.close()
    """

    def __init__(
        self,
        num_workers: int,
        create_env_fn: Callable[..., EnvBase] | Sequence[Callable[..., EnvBase]],
        create_env_kwargs: dict | Sequence[dict] | None = None,
        *,
        device: torch.device | str | int | None = None,
        pin_memory: bool = False,
        non_blocking: bool = False,
        num_threads: int | None = None,
        num_sub_threads: int = 1,
        use_buffers: bool | None = None,
        shared_memory: bool = True,
        memmap: bool = False,
        share_individual_td: bool | None = None,
        consolidate: bool = True,
        serial_for_single: bool = False,
        metadata_from_workers: bool = False,
    ) -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"num_workers must be a positive int, got {num_workers!r}")
        fns = _as_list(create_env_fn, num_workers, "create_env_fn", callable, "a callable returning an EnvBase")
        kwargs = _as_list(
            {} if create_env_kwargs is None else create_env_kwargs,
            num_workers,
            "create_env_kwargs",
            lambda x: isinstance(x, dict),
            "a dict",
        )
        if num_threads is not None and (not isinstance(num_threads, int) or num_threads < 1):
            raise ValueError(f"num_threads must be a positive int or None, got {num_threads!r}")
        if not isinstance(num_sub_threads, int) or num_sub_threads < 1:
            raise ValueError(f"num_sub_threads must be a positive int, got {num_sub_threads!r}")
        self.__dict__["num_sub_threads"] = num_sub_threads  # (workers built by metadata_from_workers)
        if metadata_from_workers:
            if use_buffers:
                raise ConfigurationError(
                    f"{type(self).__name__}(metadata_from_workers=True) requires use_buffers=False: the specs "
                    "are read from the workers once they run, too late to allocate buffers from them "
                    f"(got use_buffers={use_buffers!r})"
                )
            use_buffers = False
            meta_data = self._live_worker_metadata(fns, kwargs)
            try:
                self._check_same_specs(meta_data, RuntimeError, "the worker metadata are incompatible")
            except BaseException:
                self._stop_live_workers()
                raise
            self.__dict__["_live_workers"] = True
        else:
            meta_data = self._collect_metadata(fns, kwargs)
        worker_meta = meta_data[0]
        for meta in meta_data:
            if meta.worker_refusal is not None:
                raise RuntimeError(meta.worker_refusal)
        self._refuse_empty_specs(worker_meta)
        if device is None:
            device = worker_meta.device
        # the workers run on the host: which rows to reset is read there (SPARSE auto-reset)
        super().__init__(
            device="cpu" if device is None else device,
            batch_size=(num_workers, *worker_meta.batch_size),
            auto_reset_mode=AutoResetMode.SPARSE,
        )
        d = self.__dict__
        d["num_workers"] = num_workers
        d["create_env_fn"] = fns
        d["create_env_kwargs"] = [dict(k) for k in kwargs]  # one dict per worker (update_kwargs)
        d["meta_data"] = worker_meta
        # reset(td, set_state=True) reaches the workers: it needs every worker to honour it
        d["_supports_set_state"] = all(meta.supports_set_state for meta in meta_data)
        d["_state_is_intent"] = any(meta.state_is_intent for meta in meta_data)
        d["_worker_device"] = worker_meta.device
        d["_plan"] = KeyPlan.from_metadata(worker_meta)
        d["pin_memory"] = bool(pin_memory)
        d["non_blocking"] = bool(non_blocking)
        d["num_threads"] = num_threads
        d["num_sub_threads"] = num_sub_threads
        d["_started"] = False
        d["_exchange"] = None
        d["_observation_inputs_unread"] = False
        d["_transfer_event"] = None
        d["_closed"] = False
        if shared_memory and memmap:
            raise ConfigurationError(
                "memmap and shared memory are mutually exclusive features: pass shared_memory=False with memmap=True"
            )
        plan = self._plan
        has_nontensor = bool(plan.input_nontensor_keys or plan.reset_out_nontensor_keys or plan.next_nontensor_keys)
        d["shared_memory"] = bool(shared_memory)
        d["memmap"] = bool(memmap)
        # tensorclass entries (a Composite with a data_cls) keep their class, and their
        # non-tensor fields, only when the workers' outputs travel whole (no buffers)
        has_nontensor = has_nontensor or _has_data_cls(worker_meta.specs)
        d["_use_buffers"] = (not has_nontensor) if use_buffers is None else bool(use_buffers)
        d["_dynamic_specs"] = worker_meta.has_dynamic_specs
        if d["_dynamic_specs"]:
            self._no_buffers_for_dynamic_specs(use_buffers)
        d["share_individual_td"] = bool(share_individual_td)
        d["consolidate"] = bool(consolidate)
        d["serial_for_single"] = bool(serial_for_single)
        d["_nontensor_cache"] = {}
        d["_last_outputs"] = {}
        expanded = worker_meta.expand(self.batch_size)
        if len(meta_data) > 1:
            _stack_worker_bounds(expanded.specs, meta_data)
        if device is None:  # mixed worker devices: the data stays where the workers put it
            self.__dict__["_device"] = None
            self.input_spec = expanded.input_spec
            self.output_spec = expanded.output_spec
        else:
            self.input_spec = expanded.input_spec.to(self.device)
            self.output_spec = expanded.output_spec.to(self.device)
        self.__dict__["_batch_locked"] = worker_meta.batch_locked

    def _no_buffers_for_dynamic_specs(self, requested: bool | None) -> None:
        """Buffers are built from the specs: a dynamic (``-1``) dim has no size to allocate, so
        the data travels without them (a warning when ``use_buffers=True`` was asked for)."""
        if requested:
            warnings.warn(
                f"{type(self).__name__}(use_buffers=True): the worker specs have dynamic (-1) dims, which "
                "preallocated buffers cannot hold; the data is exchanged without buffers",
                stacklevel=3,
            )
        self.__dict__["_use_buffers"] = False

    @classmethod
    def _refuse_empty_specs(cls, meta: EnvMetaData) -> None:
        """Raises when a worker env's specs hold an empty ``Composite`` (no leaf to exchange)."""
        from gpusim.specs import Composite

        specs = meta.specs
        for root, names in (
            (specs["input_spec"], ("full_state_spec", "full_action_spec")),
            (specs["output_spec"], ("full_done_spec", "full_reward_spec", "full_observation_spec")),
        ):
            for name in names:
                if name not in root.keys():
                    continue
                for key, spec in root[name].items(True):
                    if isinstance(spec, Composite) and spec.is_empty():
                        raise RuntimeError(
                            f"The environment passed to {cls.__name__} has empty specs at {key!r} ({name}): "
                            "a batched env cannot carry an entry without leaves; remove it in the workers "
                            "with gpusim.transforms.RemoveEmptySpecs"
                        )

    @staticmethod
    def _collect_metadata(fns: list, kwargs: list) -> list[EnvMetaData]:
        """One metadata per worker (one env built per distinct factory and kwargs)."""
        cache: dict = {}
        metas = []
        for fn, kw in zip(fns, kwargs):
            cache_key = (id(fn), repr(sorted(kw.items())))
            if cache_key not in cache:
                cache[cache_key] = get_env_metadata(fn, kw)
            metas.append(cache[cache_key])
        BatchedEnvBase._check_same_specs(
            metas, ValueError, "the envs of a batched env must have the same specs (mixed environments included)"
        )
        return metas

    @staticmethod
    def _check_same_specs(metas: list[EnvMetaData], error: type, what: str) -> None:
        first = metas[0]
        for i, meta in enumerate(metas[1:], 1):
            diff = _spec_difference(first, meta)
            if diff is not None:
                raise error(f"{what}: worker {i} differs from worker 0 in {diff}")

    def _live_worker_metadata(self, fns: list, kwargs: list) -> list[EnvMetaData]:
        """``metadata_from_workers=True``: builds the worker envs (the subclass's workers, kept
        for :meth:`start`) and returns their metadata."""
        raise NotImplementedError(f"{type(self).__name__} does not support metadata_from_workers=True")

    def _stop_live_workers(self) -> None:
        """Stops the workers :meth:`_live_worker_metadata` built (their specs disagree)."""

    # ------------------------------------------------------------------ lifecycle
    @property
    def is_started(self) -> bool:
        """Whether the workers are running.

        Examples:
            >>> from gpusim.envs.batched import SerialEnv
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = SerialEnv(2, CartPoleEnv)
            >>> env.is_started
            False
            >>> _ = env.reset()
            >>> env.is_started
            True
        """
        return self._started

    @property
    def is_closed(self) -> bool:
        """Whether the workers are down: before the first use (the workers start lazily) and after
        :meth:`close` (TorchRL's meaning). An indexed view reports its own ``close``.

        Examples:
            >>> from gpusim.envs.batched import SerialEnv
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = SerialEnv(2, CartPoleEnv)
            >>> env.is_closed  # not started yet
            True
            >>> _ = env.reset()
            >>> env.is_closed
            False
        """
        d = self.__dict__
        if d.get("_closed", False):
            return True
        return "_view_parent" not in d and not d.get("_started", False)

    @is_closed.setter
    def is_closed(self, value: bool) -> None:
        self.__dict__["_closed"] = bool(value)

    def start(self) -> None:
        """Starts the workers now (otherwise they start on first use).

        Examples:
            >>> from gpusim.envs.batched import SerialEnv
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = SerialEnv(2, CartPoleEnv)
            >>> env.start()
            >>> env.is_started
            True
        """
        if "_view_parent" in self.__dict__:
            _views.check_usable(self)
            return
        if not self._started:
            if self.num_threads is not None:
                torch.set_num_threads(self.num_threads)
            self._start_workers()
            self.__dict__["_started"] = True
            self.__dict__["_closed"] = False

    def _ensure_started(self) -> None:
        if "_view_parent" in self.__dict__:
            _views.check_usable(self)
        elif not self._started:
            self.start()

    # ------------------------------------------------------------------ indexed views
    def __getitem__(self, index: Any) -> BatchedEnvBase:
        """An env of the same class over the workers ``index`` selects (int, slice, sequence,
        array or integer tensor); see :mod:`gpusim.envs.batched._views`."""
        return _views.make_view(self, _views.worker_indices(index, self.num_workers))

    def __setitem__(self, index: Any, value: Any) -> None:
        raise NotImplementedError(
            f"{type(self).__name__} does not support snapshot writeback (env[i] = other_env): its workers keep "
            "their own envs; reset or step them instead"
        )

    def _root_and_workers(self) -> tuple[BatchedEnvBase, list[int] | None]:
        """The env that holds the workers, and the workers of this env (``None``: all)."""
        parent = self.__dict__.get("_view_parent")
        if parent is None:
            return self, None
        return parent, self.__dict__["_view_indices"]

    @abc.abstractmethod
    def _start_workers(self) -> None:
        """Builds the worker envs (and processes) and ``self._exchange``."""

    @abc.abstractmethod
    def _shutdown_workers(self) -> None:
        """Stops the workers and releases the buffers (idempotent)."""

    def close(self, *, raise_if_closed: bool = False) -> None:
        """Stops the workers and releases their resources; the env restarts on next use.

        Closing a closed env does nothing (TorchRL raises there by default).

        Args:
            raise_if_closed: raise a ``RuntimeError`` instead when the env is already closed
                (and was not restarted since).

        Examples:
            >>> from gpusim.envs.batched import SerialEnv
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = SerialEnv(2, CartPoleEnv)
            >>> _ = env.reset()
            >>> env.close()
            >>> env.is_started, env.is_closed
            (False, True)
            >>> env.rollout(2).shape  # restarts
            torch.Size([2, 2])
        """
        if self.is_closed or "_view_parent" in self.__dict__:  # a view's workers are its parent's
            super().close(raise_if_closed=raise_if_closed)
            return
        if self._started:
            try:
                self._shutdown_workers()
            finally:
                self.__dict__["_started"] = False
                self.__dict__["_exchange"] = None
                self.__dict__["_builder_cache"] = None
                self.__dict__["_staging"] = {}
        super().close()

    # ------------------------------------------------------------------ worker commands
    @abc.abstractmethod
    def _run_step(self, present: tuple | None, workers: list[int] | None = None, extras: list | None = None) -> list:
        """Every worker of ``workers`` (``None``: all) steps on its input row (the ``present``
        entries of ``plan.input_keys``, ``None``: all; its non-tensor ``extras[i]``) and writes
        its ``"next"`` row; returns their answers (non-tensor outputs or ``None``)."""

    @abc.abstractmethod
    def _run_reset(self, workers: list[int], present: tuple, kwargs: dict, extras: list | None = None) -> list:
        """The listed workers reset with the ``present`` input entries (and their non-tensor
        ``extras[i]``); returns their answers (non-tensor outputs or ``None``)."""

    @abc.abstractmethod
    def _run_step_td(self, items: list[tuple[int, TensorDictBase]]) -> list[TensorDictBase]:
        """Without buffers: worker ``i`` steps on ``td`` for each ``(i, td)``; returns the
        ``"next"`` tensordicts."""

    @abc.abstractmethod
    def _run_reset_td(self, items: list[tuple[int, TensorDictBase | None]], kwargs: dict) -> list[TensorDictBase]:
        """Without buffers: worker ``i`` resets with ``td`` for each ``(i, td)``; returns the
        reset tensordicts."""

    @abc.abstractmethod
    def _run_set_seed(self, seed: int | None, static_seed: bool, workers: list[int] | None = None) -> int | None:
        """Seeds the workers (``None``: all) in order, chaining the seeds; returns the last
        worker's next seed."""

    @abc.abstractmethod
    def _run_getattr(self, name: str | tuple, workers: list[int] | None = None) -> list[tuple[bool, Any]]:
        """``(is_callable, value)`` of attribute ``name`` (a tuple: a chain) on the workers."""

    @abc.abstractmethod
    def _run_call(self, name: str | tuple, args: tuple, kwargs: dict, workers: list[int] | None = None) -> list:
        """Calls method ``name`` (a tuple: a chain) on the workers."""

    # ------------------------------------------------------------------ data movement
    def _output(self, which: str) -> TensorDictBase:
        """A fresh tensordict on the env device holding a copy of output buffer ``which``
        (``"next"`` or ``"reset"``): per-leaf clones on the worker device, else one copy of
        the buffer's byte block (through pinned memory with ``pin_memory`` on CUDA)."""
        b = self._exchange
        builder = self._builders[which]
        device = self.device
        if device == self._worker_device:
            src = b.next_leaves if which == "next" else b.reset_out_leaves
            return builder([t.clone() for t in src], device=device)
        flat, layout = b.blocks[which]
        if self.pin_memory and device.type == "cuda":
            staging = self.__dict__.setdefault("_staging", {}).get(which)
            if staging is None:
                staging = torch.empty_like(flat).pin_memory()
                self.__dict__["_staging"][which] = staging
            staging.copy_(flat)
            moved = staging.to(device, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
            self.__dict__["_transfer_event"] = event  # the staging block is reused after it
        else:
            moved = flat.to(device, non_blocking=self.non_blocking)
        return builder(layout.views(moved), device=device)

    def _wait_transfers(self) -> None:
        event = self._transfer_event
        if event is not None:
            event.synchronize()
            self.__dict__["_transfer_event"] = None

    @property
    def _builders(self) -> dict:
        builders = self.__dict__.get("_builder_cache")
        if builders is None or builders[0] is not self._exchange:
            b = self._exchange
            plan = self._plan
            out = {
                "reset": TDBuilder(b.reset_out, plan.reset_out_keys),
                "next": TDBuilder(b.next_out, plan.next_keys),
            }
            builders = (b, out)
            self.__dict__["_builder_cache"] = builders
        return builders[1]

    # ------------------------------------------------------------------ EnvBase hooks
    def _reset_inputs(self, tensordict: TensorDictBase | None, masks: ResetMasks) -> tuple[list, list[int]]:
        """The reset inputs (resolved ``"_reset"`` masks per worker done level, then state
        entries; ``None`` where absent) and the workers to reset."""
        plan = self._plan
        workers = list(range(self.num_workers))
        if tensordict is None:
            return [], workers
        # the resolved masks: the root one alone when it prevails, else one per nested level
        by_prefix = (
            {}
            if masks.root is not None
            else {lvl.prefix: m for lvl, m in zip(masks.levels, masks.masks) if m is not None}
        )
        values: list = []
        for level in plan.done_levels:
            if masks.root is not None:
                mask = masks.root if level.prefix == () else None
            else:
                mask = by_prefix.get(level.prefix)
            values.append(None if mask is None else mask.unsqueeze(-1))
        if masks.root is not None and (not plan.done_levels or plan.done_levels[0].prefix != ()):
            raise ValueError(
                f"{type(self).__name__}: a root '_reset' needs a root done level in the worker env; "
                f"its done levels are {[lvl.prefix for lvl in plan.done_levels]}"
            )
        values += [tensordict.get(k, None) for k in plan.state_keys]
        rows = masks.env_rows()
        if rows is not None and any(v is not None for v in values[: len(plan.reset_mask_keys)]):
            # which workers to call is a host decision (this is the CPU fallback)
            selected = rows.reshape(self.num_workers, -1).any(-1)
            workers = [i for i, s in enumerate(selected.tolist()) if s]
        return values, workers

    def _input_td_has_state(self, tensordict: TensorDictBase | None) -> bool:
        # workers whose data always holds their state (native envs) read no intent from it
        if not self.__dict__.get("_state_is_intent", True):
            return False
        return super()._input_td_has_state(tensordict)

    def _reset_rows(self, tensordict: TensorDictBase | None, masks: ResetMasks, **kwargs: Any) -> TensorDictBase:
        self._ensure_started()
        parent, indices = self._root_and_workers()
        if indices is not None:
            full, parent_masks = _views.to_parent(self, tensordict, masks)
            return parent._reset_rows(full, parent_masks, **kwargs)[indices]
        self._wait_transfers()
        plan = self._plan
        values, workers = self._reset_inputs(tensordict, masks)
        if not self._use_buffers:
            return self._reset_without_buffers(tensordict, values, workers, kwargs)
        b = self._exchange
        present = tuple(i for i, v in enumerate(values) if v is not None)
        if present:
            dst = [*b.reset_mask_leaves, *[b.input_leaves[plan.input_keys.index(k)] for k in plan.state_keys]]
            copy_leaves([dst[i] for i in present], [values[i] for i in present])
        extras = self._nontensor_inputs(tensordict)
        answers = self._run_reset(workers, present, kwargs, extras) if workers else []
        out = self._output("reset")
        self._set_nontensor(out, plan.reset_out_nontensor_keys, workers, answers)
        return self._maybe_individual(out)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        return self._reset_rows(tensordict, self.episode.resolve(tensordict), **kwargs)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._step_workers(tensordict, None)

    def _observation_only_inputs(self) -> list[int]:
        """Indices in ``plan.input_keys`` of the observation entries that are no action nor state."""
        return self._input_indices()[1]

    def _required_inputs(self) -> tuple[int, ...]:
        """``plan.required_inputs()``: indices of the action and state entries in ``plan.input_keys``."""
        return self._input_indices()[0]

    def _input_indices(self) -> tuple:
        cached = self.__dict__.get("_obs_only_inputs")
        if cached is None or cached[0] is not self._plan:
            plan = self._plan
            required = plan.required_inputs()
            cached = (plan, (required, [i for i in range(len(plan.input_keys)) if i not in required]))
            self.__dict__["_obs_only_inputs"] = cached
        return cached[1]

    def _note_observation_readers(self, reads: list) -> None:
        """Records, as the workers start, whether any worker env reads its observation inputs
        (``WorkerRunner.reads_observations``, one answer per worker): when none does, steps do
        not write the observations into the input buffer (the frames of an image env included)."""
        self.__dict__["_observation_inputs_unread"] = bool(reads) and not any(reads)

    def _step_workers(self, tensordict: TensorDictBase, workers: list[int] | None) -> TensorDictBase:
        """Steps ``workers`` (``None``: all) on their rows of ``tensordict``; the rows of the
        other workers in the result are stale and must be replaced by the caller."""
        self._ensure_started()
        parent, indices = self._root_and_workers()
        if indices is not None:
            full, _ = _views.to_parent(self, tensordict)
            chosen = indices if workers is None else [indices[i] for i in workers]
            return parent._step_workers(full, chosen)[indices]
        self._wait_transfers()
        if not self._use_buffers:
            return self._step_without_buffers(tensordict, workers)
        b = self._exchange
        plan = self._plan
        values = maybe_leaves(tensordict, plan.input_keys)
        extras = self._nontensor_inputs(tensordict)
        if self.__dict__.get("_observation_inputs_unread", False):
            # no worker env reads its observation inputs: the action and state entries only
            required = self._required_inputs()
            sent = [values[i] for i in required]
            if all(v is not None for v in sent):
                copy_leaves([b.input_leaves[i] for i in required], sent)
                answers = self._run_step(required, workers, extras)
                return self._step_answers(answers, workers)
        for i in self._observation_only_inputs():
            # an observation that is no action nor state is an optional input: a transform above
            # may have reshaped it (CatFrames on "observation"), which the workers do not read
            v = values[i]
            if v is not None and (v.shape != b.input_leaves[i].shape or v.dtype != b.input_leaves[i].dtype):
                values[i] = None
        if all(v is not None for v in values):
            copy_leaves(b.input_leaves, values)
            present = None
        else:
            for key, v in zip(plan.action_keys, values):
                if v is None:
                    raise KeyError(f"the input tensordict has no action entry {key!r}")
            present = tuple(i for i, v in enumerate(values) if v is not None)
            copy_leaves([b.input_leaves[i] for i in present], [values[i] for i in present])
        return self._step_answers(self._run_step(present, workers, extras), workers)

    def _step_answers(self, answers: list, workers: list[int] | None) -> TensorDictBase:
        """The ``"next"`` data of a step of ``workers`` (``None``: all) that gave ``answers``."""
        out = self._output("next")
        self._set_nontensor(
            out, self._plan.next_nontensor_keys, range(self.num_workers) if workers is None else workers, answers
        )
        return self._maybe_individual(out)

    # ------------------------------------------------------------------ non-tensor entries
    def _nontensor_inputs(self, tensordict: TensorDictBase | None) -> list[dict] | None:
        """Per worker, the non-tensor input entries of ``tensordict`` (``None``: none)."""
        keys = self._plan.input_nontensor_keys
        if tensordict is None or not keys:
            return None
        found = {}
        for key in keys:
            value = tensordict.get(key, None)
            if value is not None:
                found[key] = value
        if not found:
            return None
        return [{key: value[i] for key, value in found.items()} for i in range(self.num_workers)]

    def _set_nontensor(self, out: TensorDictBase, keys: list, workers, answers: list | None) -> None:
        """Writes the non-tensor entries the ``workers`` answered into ``out`` (the other
        workers keep their last values)."""
        if not keys:
            return
        cache = self._nontensor_cache
        for key_index, key in enumerate(keys):
            per_worker = cache.setdefault(key, [None] * self.num_workers)
            for worker, answer in zip(workers, answers or ()):
                if answer is not None:
                    per_worker[worker] = answer[key_index]
            if any(v is None for v in per_worker):
                continue
            out.set(key, NonTensorStack(*[v.to(out.device) if out.device is not None else v for v in per_worker]))

    def _maybe_individual(self, out: TensorDictBase) -> TensorDictBase:
        if self.share_individual_td and not isinstance(out, LazyStackedTensorDict):
            return LazyStackedTensorDict.lazy_stack(list(out.unbind(0)), 0)
        return out

    # ------------------------------------------------------------------ without buffers
    def _step_without_buffers(self, tensordict: TensorDictBase, workers: list[int] | None) -> TensorDictBase:
        plan = self._plan
        keys = [*plan.input_keys, *plan.input_nontensor_keys]
        inputs = tensordict.select(*keys, strict=False)
        for key in plan.action_keys:
            if key not in inputs.keys(True, True):
                raise KeyError(f"the input tensordict has no action entry {key!r}")
        rows = inputs.unbind(0)
        chosen = range(self.num_workers) if workers is None else workers
        results = self._run_step_td([(i, self._to_worker(rows[i])) for i in chosen])
        last = self._last_outputs.setdefault("next", [None] * self.num_workers)
        for i, result in zip(chosen, results):
            last[i] = result
        return self._stack_outputs(last, "next")

    def _reset_without_buffers(
        self, tensordict: TensorDictBase | None, values: list, workers: list[int], kwargs: dict
    ) -> TensorDictBase:
        plan = self._plan
        items = []
        if workers:
            worker_inputs = [None] * self.num_workers
            keys = [*plan.reset_mask_keys, *plan.state_keys]
            present = [(k, v) for k, v in zip(keys, values) if v is not None]
            extras = (
                []
                if tensordict is None
                else [(k, tensordict.get(k)) for k in plan.input_nontensor_keys if tensordict.get(k, None) is not None]
            )
            if present or extras:
                batch = TensorDict({}, batch_size=self.batch_size, device=self.device)
                for key, value in [*present, *extras]:
                    batch.set(key, value)
                worker_inputs = [self._to_worker(td) for td in batch.unbind(0)]
            items = [(i, worker_inputs[i]) for i in workers]
        results = self._run_reset_td(items, kwargs)
        last = self._last_outputs.setdefault("reset", [None] * self.num_workers)
        for (i, _), result in zip(items, results):
            last[i] = result
        parts = list(last)
        if tensordict is not None and len(items) < self.num_workers:
            # the rows not reset hold the current data, not an older reset's: their shapes may
            # have changed since (dynamic specs), and the merge keeps such rows as they are
            keys = plan.reset_out_keys
            present = set(tensordict.keys(True, True))
            if all(k in present for k in keys):
                reset = {i for i, _ in items}
                for i in range(self.num_workers):
                    if i not in reset:
                        parts[i] = tensordict[i].select(*keys)
        return self._stack_outputs(parts, "reset")

    def _to_worker(self, td: TensorDictBase) -> TensorDictBase:
        if self._worker_device is not None and td.device != self._worker_device:
            td = td.to(self._worker_device)
        return td

    def _stack_outputs(self, outputs: list, which: str) -> TensorDictBase:
        """Stacks the workers' last outputs (dense when their structures match, else lazily);
        workers without output yet contribute the zeros of their specs."""
        fake = None
        parts = []
        for out in outputs:
            if out is None:
                if fake is None:
                    fake = self.meta_data.tensordict
                    fake = fake.get("next") if which == "next" else fake.exclude("next", *self._plan.action_keys)
                out = fake.clone()
            if out.device != self.device:
                out = out.to(self.device, non_blocking=self.non_blocking)
            parts.append(out)
        if self.share_individual_td:
            return LazyStackedTensorDict.lazy_stack(parts, 0)
        return LazyStackedTensorDict.maybe_dense_stack(parts, 0)

    def _step_rows(self, tensordict: TensorDictBase, mask: torch.Tensor) -> TensorDictBase:
        """Partial step: only the workers with selected rows step (a worker's rows are all
        selected or all skipped); the skipped workers' rows hold their current data."""
        per_worker = mask.reshape(self.num_workers, -1)
        selected = per_worker.any(-1)
        if not bool((per_worker.all(-1) == selected).all()):
            raise ValueError(
                f"{type(self).__name__}.step: the '_step' entry selects part of a worker's rows; a batched "
                "env steps whole workers (every row of a worker's sub-batch selected, or none)"
            )
        workers = [i for i, s in enumerate(selected.tolist()) if s]
        next_td = self._finish_step(tensordict, self._step_workers(tensordict, workers))
        return merge_rows(next_td, _partial.skip_next(self, tensordict, clone=False), mask)

    def _set_seed(self, seed: int | None) -> None:
        self.set_seed(seed)

    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds the workers in order: worker ``i + 1`` gets the seed worker ``i`` returned.

        Args:
            seed: the first worker's seed (``None``: unseeded).
            static_seed: every worker gets ``seed`` itself.

        Returns:
            The seed that follows the last worker's (``next_seed`` applied ``num_workers``
            times for plain envs).

        Raises:
            TypeError: ``seed`` is neither an int nor ``None``.

        Examples:
            >>> import torch
            >>> from gpusim.envs.batched import SerialEnv
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = SerialEnv(2, CartPoleEnv)
            >>> _ = env.set_seed(0)
            >>> first = env.reset()["observation"]
            >>> _ = env.set_seed(0)
            >>> torch.equal(env.reset()["observation"], first)  # reproducible
            True
            >>> bool((first[0] != first[1]).any())  # the two workers got different seeds
            True
        """
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed must be an int or None, got {seed!r}")
        self._ensure_started()
        root, workers = self._root_and_workers()
        from gpusim.envs.random_actions import note_seed

        note_seed(self, seed)  # rollout()'s random actions follow the seed (EnvBase.set_seed)
        return root._run_set_seed(seed, static_seed, workers)

    # ------------------------------------------------------------------ worker attributes
    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name.startswith("_"):
                raise
        if not self.__dict__.get("_started", None) and "_plan" not in self.__dict__:
            raise AttributeError(name)
        self._ensure_started()
        return self._worker_attribute(name)

    def _worker_attribute(self, path: str | tuple) -> Any:
        """``env.<path>`` on every worker: a :class:`WorkerValues` list, or a callable calling
        every worker."""
        root, workers = self._root_and_workers()
        results = root._run_getattr(path, workers)
        label = path if isinstance(path, str) else ".".join(path)
        if all(is_callable for is_callable, _ in results):

            def call_workers(*args: Any, **kwargs: Any) -> list:
                return root._run_call(path, args, kwargs, workers)

            call_workers.__name__ = label
            return call_workers
        if any(is_callable for is_callable, _ in results):
            raise AttributeError(f"attribute {label!r} is callable on some workers only")
        return WorkerValues(self, path, [value for _, value in results])

    def update_kwargs(self, kwargs: dict | Sequence[dict]) -> None:
        """Updates the keyword arguments of the env factories: one dict for every worker, or a
        list of ``num_workers`` dicts. They take effect when the workers (re)start.

        Raises:
            RuntimeError, ValueError: a list whose length is not ``num_workers``.
            TypeError: an element that is not a dict.

        Examples:
            >>> from gpusim.envs.batched import SerialEnv
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = SerialEnv(2, CartPoleEnv)
            >>> env.update_kwargs({"seed": 3})
            >>> env.create_env_kwargs
            [{'seed': 3}, {'seed': 3}]
            >>> env.update_kwargs([{"seed": 1}])  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            gpusim.envs.batched.base.ConfigurationError: ... got 1 dicts for 2 workers
            >>> env.close()
        """
        if isinstance(kwargs, dict):
            kwargs = [kwargs] * self.num_workers
        if len(kwargs) != self.num_workers:
            raise ConfigurationError(
                f"len(kwargs) and num_workers mismatch: got {len(kwargs)} dicts for {self.num_workers} workers"
            )
        for current, new in zip(self.create_env_kwargs, kwargs):
            if not isinstance(new, dict):
                raise TypeError(f"update_kwargs takes dicts, got {type(new).__name__}")
            current.update(new)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(num_workers={self.num_workers}, batch_size={list(self.batch_size)}, "
            f"device={self.device},\n    env={self.meta_data.env_str.splitlines()[0]})"
        )
