"""Hints for Inductor inside compiled graphs (used by the torch references while tracing).

Inductor inlines a pointwise node into every consumer unless its heuristics realize it: a
``[F]`` statistic computed from reduced sums (a mean, a standard deviation) is then recomputed
for every row of a ``[B, F]`` consumer (a square root and divisions per element), and a
pointwise stack read by several reductions is rebuilt in each. :func:`realized` asks Inductor to
write the value once to a buffer of its own (``prims.inductor_force_stride_order``, the prim
Inductor lowers to a realized buffer in the given stride order); outside tracing it returns its
input unchanged.

Examples:
    >>> import torch
    >>> x = torch.ones(3)
    >>> realized(x) is x  # eager: nothing to do
    True
"""

from __future__ import annotations

import torch

__all__ = ["realized"]


def realized(x: torch.Tensor) -> torch.Tensor:
    """``x``, computed once into a buffer of its own when traced by ``torch.compile``.

    Args:
        x: a tensor.

    Returns:
        ``x`` (the same values; the same object outside tracing).

    Examples:
        >>> import torch
        >>> realized(torch.arange(3)).tolist()
        [0, 1, 2]
    """
    if not torch.compiler.is_compiling():
        return x
    return torch.ops.prims.inductor_force_stride_order.default(x, x.stride())
