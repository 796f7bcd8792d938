"""Stacking the steps of a rollout into one contiguous tensordict, cheaply on CPU.

A rollout of ``T`` steps at a large batch ends with one big copy: every leaf of every step goes
into a ``[*batch, T, ...]`` tensor (about 320 MB for a 65 536-env CartPole rollout of 59 steps).
On CPU that copy is dominated by two costs, and this module cuts both:

* first-touch page faults of the fresh output: the output leaves come from the rollout buffer
  cache (:mod:`gpusim.envs._rollout_cache`), which reuses the memory of dropped outputs and
  requests huge pages for new memory;
* the interleave itself: each row's feature bytes are moved as one wide element (a float32
  ``[4]`` row as one 16-byte element), several times faster than element by element; rows of
  one element (flags, rewards, counters) are copied step by step, or, for long rollouts of
  narrow rows, stacked step-major and transposed once;
* carried leaves are not interleaved twice: where every step's root leaf is the very tensor the
  step before held at ``("next", key)`` (what ``step_mdp`` carries over when no row reset), the
  root output is the stacked ``"next"`` output shifted by one step, copied in long runs (one per
  row of the leading batch dims) plus the first step's leaf.

The result is the same plain, contiguous ``TensorDict`` as ``torch.stack(steps, dim)`` (the
reference). The backend is chosen by :func:`gpusim.kernels._dispatch.select` (table key
``"rollout_stack"``: CPU outputs from a threshold on their bytes); anything the CPU path does not handle (lazy
stacks, non-tensor leaves, mismatched steps, leaves that require grad) goes through
``torch.stack`` unchanged.

Examples:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> steps = [TensorDict({"a": torch.full((2, 3), float(t))}, [2]) for t in range(4)]
    >>> out = stack_steps(steps, 1)
    >>> out.batch_size, out["a"][0, :, 0].tolist()
    (torch.Size([2, 4]), [0.0, 1.0, 2.0, 3.0])
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

from gpusim.envs._fasttd import stack_plain
from gpusim.envs._keys import as_tuple
from gpusim.envs._rollout_cache import rollout_empty
from gpusim.kernels._dispatch import select, threshold
from gpusim.kernels._wide import as_wide

__all__ = ["stack_steps", "stack_steps_cpu", "stack_steps_reference", "MIN_FAST_BYTES"]

MIN_FAST_BYTES = threshold("rollout_stack")
"""Outputs smaller than this are stacked by ``torch.stack`` (``BACKEND_TABLE["rollout_stack"]``)."""


class _Fallback(Exception):
    """The steps are not a tree of plain tensordicts and tensors: use ``torch.stack``."""


def _allocate_like(td: TensorDictBase, dim: int, steps: int) -> TensorDict:
    """An empty tensordict shaped like ``td`` stacked ``steps`` times along ``dim``."""
    if type(td) is not TensorDict:
        raise _Fallback
    batch = list(td.batch_size)
    batch.insert(dim, steps)
    out = TensorDict({}, batch_size=batch, device=td.device)
    for key, value in td.items():
        if type(value) is TensorDict:
            out.set(key, _allocate_like(value, dim, steps))
        elif isinstance(value, torch.Tensor) and type(value) is torch.Tensor:
            out.set(key, _empty_stacked(value, dim, steps))
        else:
            raise _Fallback
    return out


def _dense_order(x: torch.Tensor) -> list[int] | None:
    """The dims of a non-contiguous ``x`` from outermost to innermost in memory, when ``x`` is a
    permutation of a contiguous tensor (``None`` otherwise, and for a contiguous ``x``)."""
    if x.is_contiguous() or x.numel() == 0:
        return None
    order = sorted(range(x.ndim), key=lambda d: (-x.stride(d), -x.shape[d]))
    return order if x.permute(order).is_contiguous() else None


def _empty_stacked(x: torch.Tensor, dim: int, steps: int) -> torch.Tensor:
    """An empty ``[*x.shape[:dim], steps, *x.shape[dim:]]`` output for the steps of leaf ``x``.

    Laid out like ``x`` with the step dim outermost when ``x`` is a permuted dense tensor (the
    MPE worlds keep the batch innermost): each step is then one contiguous block, copied as
    such, the layout the compiled runner gives the same leaves. Row-major otherwise.
    """
    order = _dense_order(x)
    if order is None:
        shape = list(x.shape)
        shape.insert(dim, steps)
        return rollout_empty(shape, x.dtype)
    buffer = rollout_empty([steps, *(x.shape[d] for d in order)], x.dtype)
    inverse = [0] * x.ndim
    for i, d in enumerate(order):
        inverse[d] = i + 1
    return buffer.permute(0, *inverse).movedim(0, dim)


def _stack_leaf(xs: list[torch.Tensor], dim: int, dest: torch.Tensor) -> None:
    """``torch.stack(xs, dim, out=dest)``; the per-row feature bytes of contiguous leaves are
    moved as one wide element (:func:`~gpusim.kernels._wide.as_wide`: ``[B, 4]`` float32 rows as
    one 16-byte element each), a fraction of the narrow interleave's cost, bit-exact."""
    x0 = xs[0]
    if x0.numel() and all(x.is_contiguous() and x.shape == x0.shape for x in xs):
        lead = x0.shape[:dim]
        dest, *xs = as_wide(dest.view(*dest.shape[: dim + 1], -1), *(x.view(*lead, -1) for x in xs))
        if xs[0].shape[-1] != 1:
            torch.stack(xs, dim, out=dest)
            return
        if _transposes(len(xs), xs[0].numel(), dest.element_size()):
            _stack_transposed(xs, dest)
            return
        # one wide element per row (a flag, a reward, an int64 counter): a strided copy per
        # step (below) beats the interleave, which moves one element per input and row: 73
        # steps of [8192, 1] float32, one thread: 1.06 -> 0.47 ms
    elif not all(
        type(x) is torch.Tensor and x.shape == x0.shape and x.dtype == dest.dtype and not x.requires_grad for x in xs
    ):
        torch.stack(xs, dim, out=dest)
        return
    # else permuted steps (the MPE worlds keep the batch innermost) into an output laid out like
    # them (``_empty_stacked``): one contiguous block per step, where ``torch.stack`` into a
    # row-major output moves one feature row per call: 73 steps of [8192, 2, 10] float32, one
    # thread: 32.5 -> 3.0 ms
    for t, x in enumerate(xs):
        dest.select(dim, t).copy_(x)


# One element per row and step: written step by step, every step strides through the whole
# output; for long rollouts of narrow rows it is cheaper to stack the steps step-major (a block
# copy each) and transpose once (ATen's blocked 2-D transpose). Measured on cold data, one thread
# (ms, step by step / transposed): [1024] x 586 steps bool 1.65 / 0.55, float32 2.47 / 0.83,
# int64 2.46 / 1.16; [8192] x 73 float32 1.08 / 0.63, int64 1.29 / 1.02; but [65536] x 30 bool
# 0.89 / 1.10, [16384] x 100 int64 2.27 / 2.92, [65536] x 100 int64 9.64 / 35.5, and 16-byte
# elements lose from 4096 rows on. Hence: at least 64 steps, elements of at most 8 bytes, at
# most 64 KiB per step.
_TRANSPOSE_MIN_STEPS = 64
_TRANSPOSE_MAX_ITEM = 8
_TRANSPOSE_MAX_STEP_BYTES = 64 << 10


def _transposes(steps: int, rows: int, itemsize: int) -> bool:
    """Whether ``steps`` steps of ``rows`` one-element rows are stacked by :func:`_stack_transposed`."""
    return (
        steps >= _TRANSPOSE_MIN_STEPS
        and itemsize <= _TRANSPOSE_MAX_ITEM
        and rows * itemsize <= _TRANSPOSE_MAX_STEP_BYTES
    )


def _stack_transposed(srcs: Sequence[torch.Tensor], target: torch.Tensor) -> None:
    """``target`` (contiguous ``[*lead, T, 1]``) = the steps ``srcs`` (each ``[*lead, 1]``) stacked
    along the step dim: step-major into a scratch buffer, then one 2-D transpose copy."""
    steps, rows = len(srcs), srcs[0].numel()
    scratch = rollout_empty((steps, rows), target.dtype)
    torch.stack([x.reshape(rows) for x in srcs], 0, out=scratch)
    target.view(rows, steps).copy_(scratch.t())


def _output_bytes(td: TensorDictBase, steps: int) -> int:
    if _has_lazy_stack(td):  # heterogeneous entries: torch.stack's lazy result, no buffers
        return 0
    total = 0
    for value in td.values(True, True):
        if isinstance(value, torch.Tensor):
            total += value.numel() * value.element_size()
    return total * steps


def _has_lazy_stack(td: TensorDictBase) -> bool:
    if isinstance(td, LazyStackedTensorDict):
        return True
    return any(isinstance(v, TensorDictBase) and _has_lazy_stack(v) for v in td.values())


def stack_steps_reference(steps: Sequence[TensorDictBase], dim: int) -> TensorDictBase:
    """``torch.stack(steps, dim)``: the reference of :func:`stack_steps`.

    Examples:
        >>> steps = [TensorDict({"x": torch.zeros(3)}, [3]) for _ in range(2)]
        >>> stack_steps_reference(steps, 0).shape
        torch.Size([2, 3])
    """
    return torch.stack(list(steps), dim)


def stack_steps_cpu(steps: Sequence[TensorDictBase], dim: int) -> TensorDictBase:
    """The eager-CPU stack: output leaves from the rollout buffer cache, filled by wide-element
    interleaves; same result as :func:`stack_steps_reference`, to which steps this path does not
    handle (lazy stacks, non-tensor leaves, mismatched steps, leaves that require grad) go.

    Examples:
        >>> steps = [TensorDict({"x": torch.full((3,), float(t))}, [3]) for t in range(2)]
        >>> stack_steps_cpu(steps, 1)["x"][0].tolist()
        [0.0, 1.0]
    """
    first = steps[0]
    keys = set(first.keys(True, True))
    if any(set(td.keys(True, True)) != keys for td in steps):
        return stack_steps_reference(steps, dim)  # tensordict's own result or error
    try:
        out = _allocate_like(first, dim, len(steps))
        carried = _carried_keys(steps, keys)
        for key, dest in out.items(True, True):
            if as_tuple(key) not in carried:
                _stack_leaf([td.get(key) for td in steps], dim, dest)
        for key in carried:  # after the "next" leaves they are read from
            _copy_carried(steps, dim, out.get(key), out.get(("next", *key)), first.get(key))
    except (_Fallback, KeyError, RuntimeError, TypeError):
        # mismatched or unusual steps: torch.stack gives the result, or tensordict's own error
        return stack_steps_reference(steps, dim)
    return out


def _carried_keys(steps: Sequence[TensorDictBase], keys: set) -> set[tuple]:
    """The root leaf keys whose leaf at every step ``t >= 1`` is the same tensor object as step
    ``t - 1``'s ``("next", *key)`` leaf: their stacked output equals the stacked ``"next"`` output
    shifted by one step, exactly (one tensor, read once, at stack time)."""
    if len(steps) < 2:
        return set()
    tuples = {as_tuple(k) for k in keys}
    carried = set()
    for key in tuples:
        nkey = ("next", *key)
        if key[0] == "next" or nkey not in tuples:
            continue
        if all(steps[t].get(key) is steps[t - 1].get(nkey) for t in range(1, len(steps))):
            carried.add(key)
    return carried


def _copy_carried(
    steps: Sequence[TensorDictBase], dim: int, dest: torch.Tensor, nxt: torch.Tensor, x0: torch.Tensor
) -> None:
    """Fills ``dest`` (a carried root leaf's output) from ``nxt`` (the stacked ``"next"`` leaf):
    ``dest[t] = nxt[t - 1]`` along ``dim`` for ``t >= 1``, ``dest[0] = x0`` (``dest`` was allocated
    like ``x0``). Raises ``_Fallback`` where ``nxt``'s shape or dtype differs (``copy_`` would
    broadcast or cast where ``torch.stack`` raises) or ``x0`` requires grad (``torch.stack(out=...)``
    refuses it)."""
    if nxt.shape != dest.shape or nxt.dtype != dest.dtype or x0.requires_grad:
        raise _Fallback
    n = len(steps)
    dest.narrow(dim, 1, n - 1).copy_(nxt.narrow(dim, 0, n - 1))
    dest.select(dim, 0).copy_(x0)


def stack_steps(steps: Sequence[TensorDictBase], dim: int) -> TensorDictBase:
    """``torch.stack(steps, dim)``, with cached output buffers and a wide-element interleave for
    large CPU rollouts (:func:`stack_steps_cpu`, from ``threshold("rollout_stack")`` bytes).

    Args:
        steps: the per-step tensordicts (same keys, shapes and dtypes).
        dim: the stacking dim (the number of batch dims of the env).

    Returns:
        A contiguous tensordict of batch ``[*batch[:dim], len(steps), *batch[dim:]]``.

    Examples:
        >>> steps = [TensorDict({"x": torch.zeros(3)}, [3]) for _ in range(2)]
        >>> stack_steps(steps, 1).shape
        torch.Size([3, 2])
    """
    device = steps[0].device
    size = _output_bytes(steps[0], len(steps)) if device is not None and device.type == "cpu" else 0
    if select("rollout_stack", device, size) == "cpu":
        return stack_steps_cpu(steps, dim)
    return _stack_small(steps, dim)


def _stack_small(steps: Sequence[TensorDictBase], dim: int) -> TensorDictBase:
    """The reference backend: one ``torch.stack`` per leaf for plain steps (what ``torch.stack``
    of the tensordicts does, without its per-step checks); ``torch.stack`` for anything else."""
    try:
        out = stack_plain(list(steps), dim)
    except RuntimeError:  # leaves of other shapes: torch.stack raises tensordict's own error
        out = None
    return stack_steps_reference(steps, dim) if out is None else out
