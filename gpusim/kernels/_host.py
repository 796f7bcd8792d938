"""Host-side integer helpers for the Triton wrappers.

``triton.cdiv`` / ``triton.next_power_of_2`` are Triton ``ConstexprFunction`` objects whose host
calls are slow; these plain functions run every step, so they stay cheap.
"""

from __future__ import annotations

import contextlib

import torch

__all__ = ["cdiv", "next_pow2", "device_guard"]


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative ints.

    Examples:
        >>> cdiv(7, 2)
        4
    """
    return -(-a // b)


def next_pow2(n: int) -> int:
    """Smallest power of two ``>= n`` (1 for ``n <= 1``).

    Examples:
        >>> next_pow2(5), next_pow2(8), next_pow2(0)
        (8, 8, 1)
    """
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def device_guard(device: torch.device) -> contextlib.AbstractContextManager:
    """Make ``device`` current for a Triton launch, cheaply when it already is.

    Examples:
        >>> with device_guard(torch.device("cpu")):
        ...     pass
    """
    if device.type == "cuda" and device.index is not None:
        if device.index != torch.cuda.current_device():
            return torch.cuda.device(device)
    return contextlib.nullcontext()
