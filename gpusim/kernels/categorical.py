"""Uniform categorical draws: ``torch.randint`` (the reference) and a packed eager-CPU draw.

``Categorical.rand`` without a mask draws uniform integers in ``[0, n)``. ``torch.randint``
spends one generator call per element; for a power-of-two ``n`` (up to 16) the packed draw cuts
several values from each 31-bit draw of torch's generator (31 coin flips per draw for ``n=2``).
Both consume torch's default CPU generator, so a seeded run is reproducible; they give different
numbers, so which one runs is part of what a seed reproduces: :func:`categorical_rand` picks it
by :func:`~gpusim.kernels._dispatch.select` (table key ``"categorical_rand"``: eager CPU from a
threshold on the number of values; never while ``torch.compile`` traces).

Examples:
    >>> import torch
    >>> x = categorical_rand(4, (2, 3))
    >>> x.shape, x.dtype, bool(((x >= 0) & (x < 4)).all())
    (torch.Size([2, 3]), torch.int64, True)
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import torch

from gpusim.kernels._dispatch import select

__all__ = ["categorical_rand", "categorical_rand_reference", "categorical_rand_packed", "packed_draw_applies"]

_NARROW = (torch.bool, torch.uint8, torch.int8)


def categorical_rand_reference(
    n: int, shape: Sequence[int], dtype: torch.dtype = torch.int64, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """``torch.randint(0, n, shape, dtype=dtype, device=device)``.

    Examples:
        >>> categorical_rand_reference(3, (2, 4)).shape
        torch.Size([2, 4])
    """
    return torch.randint(0, n, tuple(shape), dtype=dtype, device=device)


def packed_draw_applies(n: int, dtype: torch.dtype) -> bool:
    """Whether the packed draw handles ``n`` categories of ``dtype``: ``n`` a power of two from 2
    to 16, and a dtype wider than a byte.

    Examples:
        >>> packed_draw_applies(4, torch.int64), packed_draw_applies(3, torch.int64)
        (True, False)
    """
    return not n & (n - 1) and 1 <= n.bit_length() - 1 <= 4 and dtype not in _NARROW


@functools.cache
def _bit_shifts(bits: int) -> torch.Tensor:
    """The shifts that cut ``31 // bits`` fields of ``bits`` bits from a draw (a read-only constant)."""
    return torch.arange(0, (31 // bits) * bits, bits, dtype=torch.int32)


def categorical_rand_packed(
    n: int, shape: Sequence[int], dtype: torch.dtype = torch.int64, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """Uniform integers in ``[0, n)`` on the CPU, several cut from each 31-bit generator draw.

    ``n`` and ``dtype`` outside :func:`packed_draw_applies`, and other devices, go to the reference.

    Args:
        n: the number of categories.
        shape: the output shape.
        dtype: the output dtype.
        device: the device (CPU).

    Examples:
        >>> x = categorical_rand_packed(2, (40,))
        >>> x.shape, set(x.tolist()) <= {0, 1}
        (torch.Size([40]), True)
    """
    if not packed_draw_applies(n, dtype) or torch.device(device).type != "cpu":
        return categorical_rand_reference(n, shape, dtype, device)
    shape = torch.Size(shape)
    numel = shape.numel()
    bits = n.bit_length() - 1
    per_draw = 31 // bits
    draws = torch.empty(-(-numel // per_draw), dtype=torch.int32).random_()  # 31 uniform bits each
    values = (draws.unsqueeze(-1) >> _bit_shifts(bits)).bitwise_and_(n - 1)
    return values.view(-1)[:numel].reshape(shape).to(dtype)


def categorical_rand(
    n: int, shape: Sequence[int], dtype: torch.dtype = torch.int64, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """Uniform integers in ``[0, n)`` of ``shape``: the packed draw on eager CPU from
    ``threshold("categorical_rand")`` values (:func:`categorical_rand_packed`), ``torch.randint``
    otherwise.

    Args:
        n: the number of categories (>= 1).
        shape: the output shape.
        dtype: an integer dtype.
        device: the device of the output.

    Returns:
        A fresh tensor.

    Raises:
        ValueError: ``n < 1``.

    Examples:
        >>> categorical_rand(2, (32768,)).float().mean().round(decimals=1).item()
        0.5
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n!r}")
    shape = torch.Size(shape)
    device = torch.device(device)
    backend = select("categorical_rand", device, shape.numel())
    if backend == "cpu":
        return categorical_rand_packed(n, shape, dtype, device)
    return categorical_rand_reference(n, shape, dtype, device)
