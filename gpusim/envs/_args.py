"""Argument checks shared by the env API: integral counts given as Python, NumPy or torch scalars.

Examples:
    >>> import numpy as np, torch
    >>> from gpusim.envs._args import positive_int
    >>> positive_int(np.int64(5), "max_steps"), positive_int(torch.tensor(5), "max_steps")
    (5, 5)
    >>> positive_int(2.5, "max_steps")
    Traceback (most recent call last):
    ...
    ValueError: max_steps must be a positive integer (an int, or an integral NumPy/torch scalar), got 2.5 (float)
"""

from __future__ import annotations

import operator
from typing import Any

import torch

__all__ = ["positive_int"]


def positive_int(value: Any, name: str) -> int:
    """``value`` as a Python ``int`` >= 1, or a ``ValueError`` naming ``name`` and the value.

    Accepts anything with ``__index__`` (``int``, ``np.int64``, a 0-dim integer tensor, ...),
    as ``range`` does; refuses bools, floats and tensors with more than one element. A tensor
    on an accelerator is read once here (a sync at the call, never on the step path).

    Args:
        value: the count to check.
        name: the argument's name, for the error message.

    Examples:
        >>> import numpy as np
        >>> from gpusim.envs._args import positive_int
        >>> positive_int(3, "steps"), positive_int(np.int32(3), "steps")
        (3, 3)
        >>> positive_int(0, "steps")
        Traceback (most recent call last):
        ...
        ValueError: steps must be a positive integer, got 0
    """
    bad_type = isinstance(value, bool) or (
        isinstance(value, torch.Tensor) and (value.dim() != 0 or value.dtype == torch.bool)
    )
    try:
        if bad_type:
            raise TypeError
        number = operator.index(value)
    except TypeError:
        raise ValueError(
            f"{name} must be a positive integer (an int, or an integral NumPy/torch scalar), "
            f"got {value!r} ({type(value).__name__})"
        ) from None
    if number < 1:
        raise ValueError(f"{name} must be a positive integer, got {number}")
    return number
