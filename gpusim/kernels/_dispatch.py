"""The one place that chooses a backend for every hot path: Triton kernel, CPU fast path or reference.

Every fast path of gpusim is a *backend* beside a pure-torch (or plain) *reference* with the same
contract and the same results (bit-exact for deterministic ops):

* ``"triton"``: a hand-written Triton kernel, for eager calls on CUDA tensors;
* ``"cpu"``: an eager-CPU fast path (row scatters, wide-element copies, packed draws, cached
  buffers), which pays off from a size threshold on;
* ``"reference"``: the plain implementation; it is what ``torch.compile`` traces (Inductor
  fuses it with the surrounding graph) and what small inputs take.

:func:`select` makes the choice, from the table :data:`BACKEND_TABLE` (one row per op: its
backends, its CPU threshold and the unit the threshold counts)::

    inside torch.compile                                    -> "reference"
    forced (force_backend / GPUSIM_BACKEND), op has it      -> the forced backend
    CUDA device, op has a Triton kernel, Triton installed    -> "triton"
    CPU device, op has a CPU path, size >= op's threshold    -> "cpu"
    anything else                                           -> "reference"

=====================  ==========  ==============================  ==============================
op (table key)         threshold   size unit                       backends
=====================  ==========  ==============================  ==============================
``masked_merge``       8192        elements of the largest leaf    triton, cpu, reference
``masked_fill_rows``   8192        elements of the largest leaf    triton, cpu, reference
``cat_frames_update``  8192        elements of the buffer          triton, cpu, reference
``vecnorm``            1           elements of x                   triton, cpu, reference
``categorical_rand``   32768       values drawn                    cpu, reference
``sparse_reset``       256         env rows                        cpu, reference
``rollout_stack``      8 MiB       bytes of the stacked output     cpu, reference
``rollout_cache``      1 MiB       bytes of the buffer             cpu, reference
``env_columns``        1           elements of the result          cpu, reference
=====================  ==========  ==============================  ==============================

Forcing a backend (tests, debugging): ``with force_backend("reference"): ...`` (optionally for
some ops only), or the environment variable ``GPUSIM_BACKEND`` (``auto``, the default,
``reference``, ``cpu`` or ``triton``), read once at import. A forced backend that an op does not
have (or ``"cpu"`` on a non-CPU device) gives that op its reference. Forcing ``"triton"`` on CPU
tensors runs the kernels in Triton's interpreter, which needs ``TRITON_INTERPRET=1``.
:func:`record_backends` records every choice made inside it, so a test can assert which backend
ran. ``torch.compile`` always takes the reference (nothing is forced or recorded while tracing).

Nothing here imports Triton or touches CUDA at import time: whether Triton is installed is
looked up (without importing it) the first time a CUDA tensor asks.

Examples:
    >>> import torch
    >>> select("masked_merge", torch.device("cpu"), 8192)
    'cpu'
    >>> select("masked_merge", torch.device("cpu"), 8191)
    'reference'
    >>> with force_backend("reference"):
    ...     select("masked_merge", torch.device("cpu"), 10**6)
    'reference'
    >>> threshold("categorical_rand")
    32768
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import importlib.util
import os
from collections.abc import Iterable, Iterator
from types import MappingProxyType
from typing import Literal

import torch

__all__ = [
    "BACKENDS",
    "BACKEND_TABLE",
    "Backend",
    "OpEntry",
    "force_backend",
    "record_backends",
    "select",
    "takes_cpu_path",
    "threshold",
    "triton_available",
]

Backend = Literal["triton", "cpu", "reference"]
#: Every backend name, fastest first.
BACKENDS: tuple[str, ...] = ("triton", "cpu", "reference")


@dataclasses.dataclass(frozen=True)
class OpEntry:
    """One row of :data:`BACKEND_TABLE`: the backends an op has and its CPU threshold.

    Args:
        threshold: eager CPU calls of at least this ``size`` take the ``"cpu"`` backend.
        unit: what the size passed to :func:`select` counts.
        backends: the backends the op has (always including ``"reference"``).
        why: where the threshold comes from.

    Examples:
        >>> BACKEND_TABLE["rollout_cache"].unit
        'bytes of the buffer'
    """

    threshold: int
    unit: str
    backends: tuple[str, ...]
    why: str


_ALL = ("triton", "cpu", "reference")
_CPU = ("cpu", "reference")

#: One row per op: the single source of the backends and thresholds (read-only).
BACKEND_TABLE = MappingProxyType(
    {
        "masked_merge": OpEntry(
            8192, "elements of the largest leaf", _ALL,
            "below, one torch.where per leaf beats a copy plus a row gather/scatter",
        ),
        "masked_fill_rows": OpEntry(
            8192, "elements of the largest leaf", _ALL,
            "below, one torch.where per leaf beats a row gather/scatter",
        ),
        "cat_frames_update": OpEntry(
            8192, "elements of the buffer", _ALL,
            "below, the reference's few ops cost less than the block copies' fixed costs",
        ),
        "vecnorm": OpEntry(
            1, "elements of x", _ALL,
            "the CPU path (one allocation, in-place sums) has fewer ops at every size",
        ),
        "categorical_rand": OpEntry(
            32768, "values drawn", _CPU,
            "below, torch.randint is faster than a packed draw (fixed per-op costs)",
        ),
        "sparse_reset": OpEntry(
            256, "env rows", _CPU,
            "below, hashing every row's reset noise beats reading the reset rows on the host",
        ),
        "rollout_stack": OpEntry(
            8 << 20, "bytes of the stacked output", _CPU,
            "below, torch.stack's narrow copy and fresh pages cost little",
        ),
        "rollout_cache": OpEntry(
            1 << 20, "bytes of the buffer", _CPU,
            "below, torch.empty is served by the allocator without fresh page faults",
        ),
        "env_columns": OpEntry(
            1, "elements of the result", _CPU,
            "the native envs' column ops (gpusim.envs.native._ops): on eager CPU, writing each "
            "column through a strided out= view beats a stack/interleave at every size",
        ),
    }
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class _State:
    forced: str | None = None  # a backend name, or None (automatic)
    forced_ops: frozenset | None = None  # ops the forcing applies to (None: all)
    record: list | None = None  # (op, backend) of every choice, when recording


def _backend_from_env() -> str | None:
    value = os.environ.get("GPUSIM_BACKEND", "auto").strip().lower()
    if value in ("", "auto"):
        return None
    if value not in BACKENDS:
        raise ValueError(f"GPUSIM_BACKEND must be one of 'auto', {', '.join(map(repr, BACKENDS))}, got {value!r}")
    return value


_STATE: contextvars.ContextVar[_State] = contextvars.ContextVar(
    "gpusim_backend_state",
    default=_State(forced=_backend_from_env()),  # noqa: B039 (replaced by set(), never mutated)
)


@functools.cache
def triton_available() -> bool:
    """Whether the ``triton`` package can be imported (looked up once, never imported here).

    Returns:
        ``True`` when ``import triton`` would find a package.

    Examples:
        >>> isinstance(triton_available(), bool)
        True
    """
    return importlib.util.find_spec("triton") is not None


def _entry(op: str) -> OpEntry:
    try:
        return BACKEND_TABLE[op]
    except KeyError:
        raise ValueError(f"op must be one of {sorted(BACKEND_TABLE)}, got {op!r}") from None


def threshold(op: str) -> int:
    """The CPU threshold of ``op`` (in the unit of its :data:`BACKEND_TABLE` row).

    Args:
        op: a key of :data:`BACKEND_TABLE`.

    Raises:
        ValueError: unknown ``op``.

    Examples:
        >>> threshold("sparse_reset"), threshold("rollout_stack") == 8 << 20
        (256, True)
    """
    return _entry(op).threshold


def select(op: str, device: torch.device | str | None, size: int = 0) -> Backend:
    """Chooses the backend of one call of ``op`` (see the module docstring for the rules).

    Reads only host metadata: no device sync, nothing imported.

    Args:
        op: a key of :data:`BACKEND_TABLE` (e.g. ``"masked_merge"``, ``"sparse_reset"``).
        device: the device of the call's tensors (``None``: no tensors, the reference).
        size: the call's size, in the unit of the op's row (only compared on CPU).

    Returns:
        ``"triton"``, ``"cpu"`` or ``"reference"``.

    Raises:
        ValueError: unknown ``op``.
        RuntimeError: ``"triton"`` forced while Triton is not installed.

    Examples:
        >>> select("sparse_reset", "cpu", 256), select("sparse_reset", "cpu", 255)
        ('cpu', 'reference')
        >>> select("rollout_stack", torch.device("meta"), 1 << 30)
        'reference'
    """
    if torch.compiler.is_compiling():  # before any table lookup: nothing to trace here
        return "reference"
    entry = _entry(op)
    if device is not None and not isinstance(device, torch.device):
        device = torch.device(device)
    state = _STATE.get()
    choice: Backend = "reference"
    kind = None if device is None else device.type  # (read once: ~0.45 us per torch.device.type)
    if kind is None:
        pass
    elif state.forced is not None and (state.forced_ops is None or op in state.forced_ops):
        if state.forced in entry.backends and (state.forced != "cpu" or kind == "cpu"):
            if state.forced == "triton" and not triton_available():
                raise RuntimeError(f"backend 'triton' is forced for {op!r} but Triton is not installed")
            choice = state.forced  # type: ignore[assignment]
    elif kind == "cuda":
        if "triton" in entry.backends and triton_available():
            choice = "triton"
    elif kind == "cpu" and size >= entry.threshold and "cpu" in entry.backends:
        choice = "cpu"
    if state.record is not None:
        state.record.append((op, choice))
    return choice


def takes_cpu_path(op: str, x: torch.Tensor, size: int) -> bool:
    """``select(op, x.device, size) == "cpu"``, at a third of the cost: for the per-step ops of
    the native envs, called several times per step (it reads ``x.is_cpu`` rather than
    ``x.device.type``, and takes :func:`select` itself only when a backend is forced or choices
    are recorded). Only for ops whose backends are ``"cpu"`` and ``"reference"``.

    Args:
        op: a key of :data:`BACKEND_TABLE` without a Triton backend.
        x: a tensor of the call.
        size: the call's size, in the unit of the op's row.

    Examples:
        >>> takes_cpu_path("env_columns", torch.zeros(3), 3)
        True
        >>> with force_backend("reference", "env_columns"):
        ...     takes_cpu_path("env_columns", torch.zeros(3), 3)
        False
    """
    if torch.compiler.is_compiling():
        return False
    state = _STATE.get()
    if state.forced is None and state.record is None:
        entry = _entry(op)
        return x.is_cpu and size >= entry.threshold and "cpu" in entry.backends
    return select(op, x.device, size) == "cpu"


@contextlib.contextmanager
def force_backend(backend: str | None, ops: str | Iterable[str] | None = None) -> Iterator[None]:
    """Forces ``backend`` for ``ops`` (default: all) inside the block (tests, debugging).

    An op that lacks the forced backend (or ``"cpu"`` on a non-CPU device) takes its reference;
    ``backend=None`` restores the automatic choice (e.g. under ``GPUSIM_BACKEND``). Nesting
    works; the forcing is per thread (a context variable).

    Args:
        backend: ``"triton"``, ``"cpu"``, ``"reference"`` or ``None``.
        ops: a table key or several (``None``: every op).

    Raises:
        ValueError: unknown ``backend`` or op.

    Examples:
        >>> with force_backend("cpu", "masked_merge"):
        ...     select("masked_merge", "cpu", 1), select("masked_fill_rows", "cpu", 1)
        ('cpu', 'reference')
    """
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} or None, got {backend!r}")
    if isinstance(ops, str):
        ops = (ops,)
    op_set = None if ops is None else frozenset(ops)
    for op in op_set or ():
        _entry(op)
    token = _STATE.set(dataclasses.replace(_STATE.get(), forced=backend, forced_ops=op_set))
    try:
        yield
    finally:
        _STATE.reset(token)


@contextlib.contextmanager
def record_backends() -> Iterator[list[tuple[str, str]]]:
    """Records ``(op, backend)`` for every :func:`select` inside the block (not while compiling).

    Yields:
        The list the choices are appended to, in call order.

    Examples:
        >>> with record_backends() as calls:
        ...     _ = select("vecnorm", "cpu", 10)
        >>> calls
        [('vecnorm', 'cpu')]
    """
    calls: list[tuple[str, str]] = []
    token = _STATE.set(dataclasses.replace(_STATE.get(), record=calls))
    try:
        yield calls
    finally:
        _STATE.reset(token)
