"""Shape helpers shared by every spec: sizes with dynamic (``-1``) dims and index shapes.

A spec shape may hold ``-1`` for a *dynamic* dim (its extent varies from one sample to the next,
as in TorchRL). Parameters (bounds, masks) are stored with the *safe* shape, where a dynamic dim
has size 1 and broadcasts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["as_size", "safe_size", "shape_args", "expand_index", "index_plan", "squeezed_shape"]

DYNAMIC = -1
# Stand-in sizes for dynamic dims while torch computes an index shape: huge (so that any int
# index is in range), distinct (so that they can be found back in the result) and never allocated
# (the dummy tensor is an expanded 0-d tensor).
_MARKER = 2**40


def as_size(shape: Any) -> torch.Size:
    """Turns an int, a sequence of ints, a tensor or None into a :class:`torch.Size`.

    ``-1`` marks a dynamic dim; any other negative value is rejected.

    Examples:
        >>> as_size(3), as_size((2, -1)), as_size(None)
        (torch.Size([3]), torch.Size([2, -1]), torch.Size([]))
    """
    if shape is None:
        return torch.Size(())
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        dims: tuple = (int(shape),)
    elif isinstance(shape, torch.Tensor):
        dims = tuple(int(s) for s in shape.reshape(-1).tolist())
    else:
        try:
            dims = tuple(int(s) for s in shape)
        except TypeError as err:
            raise TypeError(f"shape must be an int or a sequence of ints, got {shape!r}") from err
    if any(d < DYNAMIC for d in dims):
        raise ValueError(f"shape dims must be >= 0 (or -1 for a dynamic dim), got shape={tuple(dims)}")
    return torch.Size(dims)


def safe_size(shape: torch.Size) -> torch.Size:
    """The shape with every dynamic (``-1``) dim replaced by 1 (a shape tensors can have).

    Examples:
        >>> safe_size(torch.Size([-1, 3]))
        torch.Size([1, 3])
    """
    return torch.Size(1 if d == DYNAMIC else d for d in shape)


def shape_args(shape: tuple) -> torch.Size:
    """Accepts the ``f(2, 3)``, ``f((2, 3))`` and ``f(torch.Size([2, 3]))`` call styles.

    Examples:
        >>> shape_args((2, 3)), shape_args(([2, 3],))
        (torch.Size([2, 3]), torch.Size([2, 3]))
    """
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        return as_size(shape[0])
    return as_size(shape)


def _consumed(item: Any) -> int:
    if item is None or item is Ellipsis:
        return 0
    if isinstance(item, torch.Tensor) and item.dtype == torch.bool:
        return max(item.ndim, 1)
    if isinstance(item, np.ndarray) and item.dtype == np.bool_:
        return max(item.ndim, 1)
    return 1


def expand_index(idx: Any, ndim: int) -> tuple:
    """Normalizes an index to a tuple without Ellipsis, relative to ``ndim`` leading dims.

    ``range`` and nested tuples become lists (numpy's and TorchRL's reading of them). The result
    only touches the first ``ndim`` dims of any tensor it is applied to, so the same index can be
    applied to parameters or children that carry extra trailing dims.

    Raises:
        IndexError: for more than one Ellipsis or more indices than ``ndim`` dims.

    Examples:
        >>> expand_index((0, ...), 3)
        (0, slice(None, None, None), slice(None, None, None))
    """
    if not isinstance(idx, tuple):
        idx = (idx,)
    idx = tuple(list(item) if isinstance(item, (range, tuple)) else item for item in idx)
    n_ellipsis = sum(item is Ellipsis for item in idx)
    if n_ellipsis > 1:
        raise IndexError(f"an index can only have a single ellipsis (`...`), got {idx!r}")
    consumed = sum(_consumed(item) for item in idx)
    if consumed > ndim:
        raise IndexError(
            f"too many indices: the spec has {ndim} indexable dim(s) but {consumed} were indexed by {idx!r}"
        )
    if n_ellipsis == 0:
        return idx
    out: list = []
    for item in idx:
        if item is Ellipsis:
            out.extend([slice(None)] * (ndim - consumed))
        else:
            out.append(item)
    return tuple(out)


def _is_full_slice(item: Any) -> bool:
    return (
        isinstance(item, slice)
        and item.start is None
        and item.stop is None
        and item.step
        in (
            None,
            1,
        )
    )


def index_plan(shape: torch.Size, idx: tuple) -> tuple[torch.Size, tuple, tuple[int, ...]]:
    """Shape of ``shape`` indexed by ``idx`` (from :func:`expand_index`), and how to index params.

    Parameters are stored with the safe shape; they are indexed by
    ``param.flip(flips)[param_idx]``: an int on a dynamic dim becomes 0, a slice with a negative
    step becomes a positive slice of the flipped dim (torch has no negative steps).

    Raises:
        IndexError: for out-of-range indices, or anything but ``:`` or an int on a dynamic dim.

    Examples:
        >>> index_plan(torch.Size([5, -1]), (slice(4, 1, -1), 0))[0]
        torch.Size([3])
    """
    marker_shape = []
    n_dyn = 0
    for d in shape:
        if d == DYNAMIC:
            marker_shape.append(_MARKER + n_dyn)
            n_dyn += 1
        else:
            marker_shape.append(d)
    shape_idx: list = []
    param_idx: list = []
    flips: list[int] = []
    dim = 0
    for item in idx:
        size = shape[dim] if dim < len(shape) else None
        if isinstance(item, np.ndarray):
            item = torch.from_numpy(item)
        if item is None:
            shape_idx.append(None)
            param_idx.append(None)
            continue
        if size == DYNAMIC:
            if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
                shape_idx.append(int(item))
                param_idx.append(0)
            elif _is_full_slice(item):
                shape_idx.append(item)
                param_idx.append(item)
            else:
                raise IndexError(
                    f"cannot index a dynamic (-1) dim with {item!r}: the extent of the dim is "
                    "unknown (only ':' or an int are allowed)"
                )
            dim += 1
            continue
        if isinstance(item, slice) and item.step is not None and item.step < 0:
            positions = range(size)[item]
            if len(positions) == 0:
                item = slice(0, 0)
            else:
                step = -item.step
                item = slice(size - 1 - positions[0], size - positions[-1], step)
                flips.append(dim)
        if isinstance(item, slice) and item.step == 0:
            raise ValueError("slice step cannot be zero")
        shape_idx.append(item)
        param_idx.append(item)
        dim += _consumed(item)
    dummy = torch.empty((), dtype=torch.uint8).expand(marker_shape)
    cpu_idx = tuple(i.cpu() if isinstance(i, torch.Tensor) else i for i in shape_idx)
    out = dummy[cpu_idx].shape
    new_shape = torch.Size(DYNAMIC if s >= _MARKER else s for s in out)
    return new_shape, tuple(param_idx), tuple(flips)


def squeezed_shape(shape: torch.Size, dim: int | None) -> torch.Size | None:
    """The shape without its size-1 dims (all, or ``dim``), or None when nothing changes.

    As in TorchRL, ``dim=None`` leaves a 1-D shape alone.

    Examples:
        >>> squeezed_shape(torch.Size([1, 3, 1]), None), squeezed_shape(torch.Size([1]), None)
        (torch.Size([3]), None)
    """
    if dim is None:
        if len(shape) == 1 or 1 not in shape:
            return None
        return torch.Size(s for s in shape if s != 1)
    d = dim + len(shape) if dim < 0 else dim
    if not 0 <= d < len(shape):
        raise ValueError(f"squeeze: dim {dim} is out of range for shape {tuple(shape)}")
    if shape[d] != 1:
        return None
    return torch.Size(s for i, s in enumerate(shape) if i != d)
