"""Hints for Inductor inside compiled graphs (used by the torch references while tracing).

Inductor inlines a pointwise node into every consumer unless its heuristics realize it: a
``[F]`` statistic computed from reduced sums (a mean, a standard deviation) is then recomputed
for every row of a ``[B, F]`` consumer (a square root and divisions per element), and a
pointwise stack read by several reductions is rebuilt in each. :func:`realized` asks Inductor to
write the value once to a buffer of its own (``prims.inductor_force_stride_order``, the prim
Inductor lowers to a realized buffer in the given stride order: a torch internal, used through
:func:`gpusim._torch_internals.force_realize`); outside tracing, or with the internals off, it
returns its input unchanged.

Inductor's C++ code (torch 2.13) loads and stores bool tensors through the generic 64-lane
``Vectorized<bool>``, a scalar byte loop: a compare stored to a bool buffer measured 497 us per
65536 rows, the same stored as ``uint8`` through ``int32`` 15 us (the ``int32`` step keeps the
conversion vectorized; ``.to(torch.uint8)`` of a bool measured 189 us). Bool data that a CPU
graph stores therefore goes through :func:`pack_bool` and comes back through
:func:`unpack_bool` (a ``!= 0`` that stays a vector mask).

Examples:
    >>> import torch
    >>> x = torch.ones(3)
    >>> realized(x) is x  # eager: nothing to do
    True
"""

from __future__ import annotations

import torch

from gpusim._torch_internals import force_realize

__all__ = ["in_cpu_graph", "pack_bool", "realized", "unpack_bool"]


def in_cpu_graph(x: torch.Tensor) -> bool:
    """Whether ``x`` is being traced by ``torch.compile`` into a CPU graph: where the hints of this
    module apply (they answer Inductor's C++ code; its Triton code needs none of them).

    Examples:
        >>> import torch
        >>> in_cpu_graph(torch.ones(2))  # eager
        False
    """
    return x.device.type == "cpu" and torch.compiler.is_compiling()


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
    return force_realize(x)


def pack_bool(flag: torch.Tensor) -> torch.Tensor:
    """A bool tensor as ``uint8`` 0/1 (through ``int32``: see the module docstring), e.g. for a
    write through a ``uint8`` view of bool memory.

    Examples:
        >>> import torch
        >>> pack_bool(torch.tensor([True, False])).tolist()
        [1, 0]
    """
    return flag.to(torch.int32).to(torch.uint8)


def unpack_bool(raw: torch.Tensor) -> torch.Tensor:
    """The bool tensor of ``uint8`` 0/1 values (:func:`pack_bool`'s inverse); ``!= 0`` on
    ``int32`` keeps it a vector mask (``.to(torch.bool)`` of ``uint8`` loads bytewise).

    Examples:
        >>> import torch
        >>> unpack_bool(torch.tensor([1, 0], dtype=torch.uint8)).tolist()
        [True, False]
    """
    return raw.to(torch.int32) != 0
