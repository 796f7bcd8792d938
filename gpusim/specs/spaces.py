"""Small value objects describing the set of valid values of a leaf spec (``spec.space``)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["ContinuousBox", "CategoricalBox", "MultiCategoricalBox", "BinaryBox"]


@dataclass(frozen=True, eq=False)
class ContinuousBox:
    """Elementwise bounds ``low <= x <= high``; ``low``/``high`` have the spec shape.

    Examples:
        >>> from gpusim.specs import Bounded
        >>> Bounded(-1.0, 1.0, shape=(2,)).space.high
        tensor([1., 1.])
    """

    low: torch.Tensor
    high: torch.Tensor


@dataclass(frozen=True)
class CategoricalBox:
    """Integer values in ``[0, n)``.

    Examples:
        >>> from gpusim.specs import Categorical
        >>> Categorical(4).space
        CategoricalBox(n=4)
    """

    n: int


@dataclass(frozen=True)
class MultiCategoricalBox:
    """One integer in ``[0, nvec[i])`` per position of the last dim.

    Examples:
        >>> from gpusim.specs import MultiCategorical
        >>> MultiCategorical([2, 3]).space
        MultiCategoricalBox(nvec=(2, 3))
    """

    nvec: tuple[int, ...]


@dataclass(frozen=True)
class BinaryBox:
    """``n`` independent 0/1 values.

    Examples:
        >>> from gpusim.specs import Binary
        >>> Binary(3).space
        BinaryBox(n=3)
    """

    n: int
