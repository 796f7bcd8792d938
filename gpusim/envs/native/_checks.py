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

__all__ = ["check_number", "check_positive", "check_choice", "check_increasing", "random_seed"]


def check_number(name: str, value: object) -> float:
    """Return ``value`` as a float if it is a finite real number, else raise.

    Args:
        name: the argument name (for the message).
        value: the value to check.

    Examples:
        >>> check_number("g", 10)
        10.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


def check_positive(name: str, value: object) -> float:
    """Return ``value`` as a float if it is a finite number ``> 0``, else raise.

    Args:
        name: the argument name (for the message).
        value: the value to check.

    Examples:
        >>> check_positive("masscart", 1)
        1.0
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return check_number(name, value)


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
