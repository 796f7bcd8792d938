"""Small helpers shared by the leaf spec modules (argument checks, samplers, messages)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

__all__ = [
    "reject_kwargs",
    "resolve_dtype",
    "bad_msg",
    "masked_choice",
    "rand_bits",
    "prep_mask",
    "check_n",
]


def reject_kwargs(cls: str, kwargs: dict) -> None:
    """Raises TypeError naming unknown keyword arguments.

    Examples:
        >>> reject_kwargs("Spec", {})
        >>> reject_kwargs("Spec", {"bogus": 1})
        Traceback (most recent call last):
        ...
        TypeError: Spec() got unexpected keyword argument(s): ['bogus']
    """
    if kwargs:
        raise TypeError(f"{cls}() got unexpected keyword argument(s): {sorted(kwargs)}")


def resolve_dtype(dtype: Any, default: torch.dtype | None = None) -> torch.dtype:
    """A torch dtype from a torch dtype, a numpy dtype or its name (None: ``default``, or
    torch's default dtype).

    Examples:
        >>> resolve_dtype("int32"), resolve_dtype(None, torch.int8)
        (torch.int32, torch.int8)
    """
    if dtype is None:
        return default if default is not None else torch.get_default_dtype()
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return torch.from_numpy(np.zeros((), dtype=np.dtype(dtype))).dtype
    except TypeError as err:
        raise TypeError(f"dtype must be a torch.dtype, got {dtype!r}") from err


def check_n(cls: str, name: str, n: Any, allow_undefined: bool = False) -> int:
    """A category count: an int >= 0 (or -1 when ``allow_undefined``).

    Examples:
        >>> check_n("Categorical", "n", torch.tensor(3)), check_n("C", "n", -1, True)
        (3, -1)
    """
    if isinstance(n, torch.Tensor):
        n = n.item()
    low = -1 if allow_undefined else 0
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < low:
        allowed = "an int >= 0 (or -1: undefined)" if allow_undefined else "an int >= 0"
        raise ValueError(f"{cls}: {name} must be {allowed}, got {name}={n!r}")
    return int(n)


def bad_msg(what: str, bad: torch.Tensor, val: torch.Tensor) -> str:
    """``"3 element(s) <what>, e.g. <first bad value>"``.

    Examples:
        >>> x = torch.tensor([1.0, 5.0, 7.0])
        >>> bad_msg("above 2", x > 2, x)
        '2 element(s) above 2, e.g. 5.0'
    """
    count = int(bad.sum())
    example = val.expand_as(bad)[bad].reshape(-1)[0].item()
    return f"{count} element(s) {what}, e.g. {example!r}"


def masked_choice(mask: torch.Tensor, full_shape: torch.Size) -> torch.Tensor:
    """Uniform index over the True entries of ``mask`` along its last dim (argmax of masked noise).

    ``full_shape`` is the output shape without the choice dim; rows with no True entry give 0.

    Examples:
        >>> masked_choice(torch.tensor([False, True, False]), torch.Size([4]))
        tensor([1, 1, 1, 1])
    """
    noise = torch.rand((*full_shape, mask.shape[-1]), device=mask.device)
    return torch.where(mask, noise, -1.0).argmax(-1)


def rand_bits(full_shape: torch.Size, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Fair coin flips (0/1 or False/True).

    Examples:
        >>> rand_bits(torch.Size([3]), torch.bool, torch.device("cpu")).dtype
        torch.bool
    """
    if dtype == torch.bool:
        return torch.rand(full_shape, device=device) < 0.5
    if dtype.is_floating_point:
        return (torch.rand(full_shape, device=device) < 0.5).to(dtype)
    return torch.randint(0, 2, full_shape, dtype=dtype, device=device)


def prep_mask(cls: str, mask: Any, shape: torch.Size, device: torch.device) -> torch.Tensor | None:
    """Validates a boolean mask and returns it expanded to ``shape`` (None stays None).

    A mask with as many elements as the last dim of ``shape`` is read as one row; a mask with
    the leading dims of ``shape`` and trailing dims whose product is its last dim (a ``(5, 5)``
    grid over 25 categories) is flattened to it.

    Examples:
        >>> prep_mask("Spec", [True, False], torch.Size([3, 2]), torch.device("cpu")).shape
        torch.Size([3, 2])
    """
    if mask is None:
        return None
    mask = torch.as_tensor(mask, device=device)
    if mask.dtype != torch.bool:
        raise ValueError(f"{cls}: mask must be a bool tensor, got dtype={mask.dtype}")
    if shape and mask.numel() == shape[-1] and mask.shape != shape[-1:]:
        mask = mask.reshape(shape[-1])
    elif shape and mask.ndim > len(shape) and mask.shape[: len(shape) - 1] == shape[:-1]:
        # a mask of several trailing dims (a grid ``(rows, cols)``) over a flat category dim
        tail = mask.shape[len(shape) - 1 :]
        if math.prod(tail) == shape[-1]:
            mask = mask.reshape(*shape[:-1], shape[-1])
    try:
        return mask.expand(shape)
    except RuntimeError as err:
        raise ValueError(f"{cls}: mask of shape {tuple(mask.shape)} does not broadcast to {tuple(shape)}") from err
