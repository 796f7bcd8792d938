"""Construction-time argument checks and small helpers shared by the native envs.

Every check raises a ``TypeError``/``ValueError`` that names the argument and its value; none of
them runs per step.

Examples:
    >>> check_positive("tau", 0.02)
    0.02
    >>> check_positive("tau", 0.0)
    Traceback (most recent call last):
    ...
    ValueError: tau must be a finite number > 0, got 0.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

__all__ = ["check_number", "check_positive", "check_probability", "check_choice", "check_increasing", "random_seed"]


def _check_tensor(name: str, value: torch.Tensor, positive: bool) -> torch.Tensor:
    """A per-env value (a tensor): real, finite (and ``> 0``), as float32. Construction only."""
    if value.dtype == torch.bool or value.is_complex():
        raise TypeError(f"{name} must hold real numbers, got a tensor of dtype {value.dtype}")
    ok = torch.isfinite(value) & (value > 0) if positive else torch.isfinite(value)
    if not bool(ok.all()):
        need = "finite numbers > 0" if positive else "finite numbers"
        raise ValueError(f"{name} must hold {need}, got {value.tolist()}")
    return value.to(torch.float32)


def check_number(name: str, value: object) -> float | torch.Tensor:
    """Return ``value`` as a float if it is a finite real number, else raise.

    A tensor (one value per env, see :mod:`gpusim.envs.native.params`) is returned as float32
    after the same check of every element.

    Args:
        name: the argument name (for the message).
        value: the value to check.

    Examples:
        >>> check_number("g", 10)
        10.0
        >>> check_number("g", torch.tensor([9, 10]))
        tensor([ 9., 10.])
    """
    if isinstance(value, torch.Tensor):
        return _check_tensor(name, value, positive=False)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


def check_positive(name: str, value: object) -> float | torch.Tensor:
    """Return ``value`` as a float if it is a finite number ``> 0``, else raise (tensors: see
    :func:`check_number`).

    Args:
        name: the argument name (for the message).
        value: the value to check.

    Examples:
        >>> check_positive("masscart", 1)
        1.0
        >>> check_positive("masscart", torch.tensor([1.0, -1.0]))
        Traceback (most recent call last):
        ...
        ValueError: masscart must hold finite numbers > 0, got [1.0, -1.0]
    """
    if isinstance(value, torch.Tensor):
        return _check_tensor(name, value, positive=True)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return check_number(name, value)


def check_probability(name: str, value: object) -> float | torch.Tensor:
    """Return ``value`` as a float if it is a number in ``[0, 1]``, else raise (a tensor: every
    element checked, returned as float32, as :func:`check_number`). Construction only.

    Args:
        name: the argument name (for the message).
        value: the value to check.

    Examples:
        >>> check_probability("p", 0)
        0.0
        >>> check_probability("p", torch.tensor([0.5, 1.5]))
        Traceback (most recent call last):
        ...
        ValueError: p must be in [0, 1], got [0.5, 1.5]
    """
    if isinstance(value, torch.Tensor):
        value = _check_tensor(name, value, positive=False)
        if not bool(((value >= 0) & (value <= 1)).all()):
            raise ValueError(f"{name} must be in [0, 1], got {value.tolist()}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return float(value)


def check_choice(name: str, value: object, choices: Sequence[object]) -> object:
    """Return ``value`` if it is one of ``choices``, else raise ``ValueError``.

    Examples:
        >>> check_choice("book_or_nips", "book", ("book", "nips"))
        'book'
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def check_increasing(low_name: str, low: float, high_name: str, high: float) -> None:
    """Raise ``ValueError`` unless ``low < high``.

    Examples:
        >>> check_increasing("min_position", -1.2, "max_position", 0.6)
    """
    if not low < high:
        raise ValueError(f"{low_name} ({low!r}) must be smaller than {high_name} ({high!r})")


def random_seed() -> int:
    """A seed drawn from torch's global generator (so ``torch.manual_seed`` makes it repeatable).

    Examples:
        >>> _ = torch.manual_seed(0)
        >>> a = random_seed()
        >>> _ = torch.manual_seed(0)
        >>> a == random_seed()
        True
    """
    return int(torch.randint(0, 2**62, ()))
