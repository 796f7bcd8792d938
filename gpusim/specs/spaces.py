"""Value objects describing the set of valid values of a leaf spec (``spec.space``)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

__all__ = [
    "Box",
    "ContinuousBox",
    "CategoricalBox",
    "DiscreteBox",
    "MultiCategoricalBox",
    "BoxList",
    "BinaryBox",
]


def squash(t: torch.Tensor) -> torch.Tensor:
    """Narrows every expanded (stride-0) dim of ``t`` to size 1: the smallest tensor that
    broadcasts back to ``t``. No copy.

    Examples:
        >>> squash(torch.zeros(3).expand(4, 3)).shape
        torch.Size([1, 3])
    """
    for d in range(t.ndim):
        if t.stride(d) == 0 and t.shape[d] > 1:
            t = t.narrow(d, 0, 1)
    return t


def _overlaps(t: torch.Tensor) -> bool:
    return any(st == 0 and sz > 1 for st, sz in zip(t.stride(), t.shape))


class Box:
    """Base class of the ``space`` objects of the leaf specs.

    Examples:
        >>> isinstance(CategoricalBox(3), Box)
        True
    """

    def clone(self) -> Box:
        """A copy (boxes without tensors are immutable and return themselves).

        Examples:
            >>> box = CategoricalBox(3)
            >>> box.clone() is box
            True
        """
        return self

    def to(self, dest: Any) -> Box:
        """The box on another device / with another dtype (no-op for boxes without tensors).

        Examples:
            >>> box = CategoricalBox(3)
            >>> box.to(torch.float64) is box
            True
        """
        return self


class ContinuousBox(Box):
    """Elementwise bounds ``low <= x <= high``.

    The bounds may be stored compactly: once a :class:`~gpusim.specs.Composite` registers its
    batch size (:attr:`batch_size`), bounds that are the same for every batch element are kept
    once (``_low``/``_high`` lose the batch dims) and :attr:`low`/:attr:`high` return full copies.
    Otherwise :attr:`low`/:attr:`high` return the stored tensors, so in-place changes are seen by
    the spec.

    Args:
        low: the lower bound (full shape).
        high: the upper bound (full shape).
        device: where the bounds live (default: the device of ``low``).

    Examples:
        >>> box = ContinuousBox(torch.zeros(4, 2), torch.ones(4, 2))
        >>> box.batch_size = (4,)
        >>> box._low.shape, box.low.shape
        (torch.Size([2]), torch.Size([4, 2]))
    """

    def __init__(self, low: torch.Tensor, high: torch.Tensor, device: torch.device | None = None) -> None:
        self._low = low
        self._high = high
        self._owned = False  # False: _low/_high may be views shared with another spec
        self._batch_size: torch.Size | None = None
        self.device = low.device if device is None else torch.device(device)

    # ------------------------------------------------------------------ storage
    def _own(self) -> None:
        """Makes ``_low``/``_high`` private copies (done once, before they are handed out)."""
        if not self._owned:
            self._low = self._low.clone()
            self._high = self._high.clone()
            self._owned = True

    def _full(self, which: str) -> torch.Tensor:
        """The full-shape bound as a view (no copy): for internal shape ops."""
        t = self._low if which == "low" else self._high
        if self._batch_size:
            return t.expand(*self._batch_size, *t.shape)
        return t

    def _compact(self, which: str) -> torch.Tensor:
        """The smallest tensor that broadcasts (from the right) to the full bound."""
        return squash(self._low if which == "low" else self._high)

    @property
    def batch_size(self) -> torch.Size | None:
        """The registered batch dims (None when none is registered).

        Setting it keeps the bounds once when they are the same along those dims; otherwise the
        bounds stay full and it stays None.

        Examples:
            >>> box = ContinuousBox(torch.zeros(4, 2), torch.ones(4, 2))
            >>> box.batch_size is None
            True
            >>> box.batch_size = (4,)
            >>> box.batch_size, box.low.shape
            (torch.Size([4]), torch.Size([4, 2]))
            >>> varying = ContinuousBox(torch.tensor([[0.0], [1.0]]), torch.full((2, 1), 2.0))
            >>> varying.batch_size = (2,)
            >>> varying.batch_size is None
            True
        """
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: Any) -> None:
        if value is None:
            low, high = self._full("low"), self._full("high")
            self._low, self._high, self._batch_size = low, high, None
            self._owned = False
            return
        value = torch.Size(1 if int(v) < 0 else int(v) for v in value)
        full_shape = self._full("low").shape
        if full_shape[: len(value)] != value:
            raise ValueError(
                f"ContinuousBox: batch size {tuple(value)} is not a prefix of the bounds' shape {tuple(full_shape)}"
            )
        low, high = self._full("low"), self._full("high")
        nb = len(value)
        if nb == 0:
            self._low, self._high, self._batch_size = low, high, value
            self._owned = False
            return
        row = (0,) * nb
        lo_row, hi_row = low[row], high[row]
        uniform = all(squash(t).shape[:nb] == (1,) * nb for t in (low, high)) or (
            torch.equal(low, lo_row.expand_as(low)) and torch.equal(high, hi_row.expand_as(high))
        )
        if uniform:
            self._low, self._high = lo_row.clone(), hi_row.clone()
            self._owned = True
            self._batch_size = value
        else:
            self._low, self._high, self._batch_size = low, high, None

    # ------------------------------------------------------------------ bounds
    def _get(self, which: str) -> torch.Tensor:
        if self._batch_size:
            return self._full(which).clone()
        if _overlaps(self._low) or _overlaps(self._high):
            self._low = self._low.clone()
            self._high = self._high.clone()
            self._owned = True
        self._own()
        return self._low if which == "low" else self._high

    def _set(self, which: str, value: torch.Tensor) -> None:
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"ContinuousBox.{which} must be a tensor, got {type(value).__name__}")
        other = self._full("high" if which == "low" else "low")
        batch = self._batch_size
        if which == "low":
            self._low, self._high = value, other
        else:
            self._low, self._high = other, value
        self._batch_size = None
        self._owned = True
        self.device = value.device
        if batch:
            self.batch_size = batch

    @property
    def low(self) -> torch.Tensor:
        """The lower bound, full shape.

        Without a registered :attr:`batch_size` it is the stored tensor (in-place changes are
        kept); with one, a full copy.

        Examples:
            >>> box = ContinuousBox(torch.zeros(2), torch.ones(2))
            >>> box.low[0] = -1.0
            >>> box.low
            tensor([-1.,  0.])
        """
        return self._get("low")

    @low.setter
    def low(self, value: torch.Tensor) -> None:
        self._set("low", value)

    @property
    def high(self) -> torch.Tensor:
        """The upper bound, full shape (stored tensor or copy, as :attr:`low`).

        Examples:
            >>> ContinuousBox(torch.zeros(2), torch.tensor([1.0, 2.0])).high
            tensor([1., 2.])
        """
        return self._get("high")

    @high.setter
    def high(self, value: torch.Tensor) -> None:
        self._set("high", value)

    def __iter__(self) -> Iterator[torch.Tensor]:
        yield self.low
        yield self.high

    def unbind(self, dim: int = 0) -> tuple[ContinuousBox, ...]:
        """One box per slice of ``dim``.

        Examples:
            >>> box = ContinuousBox(torch.zeros(2), torch.tensor([1.0, 2.0]))
            >>> [(part.low, part.high) for part in box.unbind(0)]
            [(tensor(0.), tensor(1.)), (tensor(0.), tensor(2.))]
        """
        return tuple(
            ContinuousBox(lo, hi, self.device)
            for lo, hi in zip(self._full("low").unbind(dim), self._full("high").unbind(dim))
        )

    def to(self, dest: Any) -> ContinuousBox:
        """A box with its bounds moved to a device or cast to a dtype.

        Examples:
            >>> box = ContinuousBox(torch.zeros(2), torch.ones(2))
            >>> box.to(torch.float64).low.dtype, box.to("cpu").device
            (torch.float64, device(type='cpu'))
        """
        low, high = self._full("low"), self._full("high")
        if isinstance(dest, torch.dtype):
            return ContinuousBox(low.to(dest), high.to(dest), self.device)
        dev = torch.device(dest)
        moved = [squash(t).to(dev).expand(t.shape) for t in (low, high)]
        return ContinuousBox(moved[0], moved[1], dev)

    def clone(self) -> ContinuousBox:
        """A copy of the box (bounds copied compactly: expanded dims stay expanded).

        Examples:
            >>> box = ContinuousBox(torch.zeros(2), torch.ones(2))
            >>> copy = box.clone()
            >>> copy == box, copy.low is box.low
            (True, False)
        """
        low, high = self._full("low"), self._full("high")
        box = ContinuousBox(
            squash(low).clone().expand(low.shape),
            squash(high).clone().expand(high.shape),
            self.device,
        )
        box._owned = True if not (_overlaps(box._low) or _overlaps(box._high)) else False
        return box

    def __eq__(self, other: object) -> bool:
        if other is None:
            return False
        if type(other) is not type(self):
            return False
        a_lo, a_hi = self._full("low"), self._full("high")
        b_lo, b_hi = other._full("low"), other._full("high")  # type: ignore[attr-defined]
        if a_lo.shape != b_lo.shape or a_lo.dtype != b_lo.dtype or a_hi.dtype != b_hi.dtype:
            return False
        if self.device != other.device:  # type: ignore[attr-defined]
            return False
        dev = a_lo.device
        return bool(
            torch.equal(squash(a_lo).expand(a_lo.shape), b_lo.to(dev))
            and torch.equal(squash(a_hi).expand(a_hi.shape), b_hi.to(dev))
        )

    __hash__ = None  # type: ignore[assignment]

    def _contiguous(self) -> bool:
        """Whether :attr:`high` (what a reader gets) is contiguous, without building it."""
        if self._batch_size or not self._owned or _overlaps(self._high):
            return True  # the getter hands out a fresh copy
        return self._high.is_contiguous()

    def __repr__(self) -> str:
        contiguous = self._contiguous()
        lines = []
        for name in ("low", "high"):
            t = self._full(name)
            lines.append(
                f"\n{name}=Tensor(shape={t.shape}, device={t.device}, dtype={t.dtype}, contiguous={contiguous})"
            )
        low, high = (textwrap.indent(line, "    ") for line in lines)
        return f"ContinuousBox({low},{high})"


@dataclass(frozen=True)
class CategoricalBox(Box):
    """Integer values in ``[0, n)`` (``n=-1``: not known yet).

    Examples:
        >>> from gpusim.specs import Categorical
        >>> Categorical(4).space
        CategoricalBox(n=4)
    """

    n: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", int(self.n))


DiscreteBox = CategoricalBox


@dataclass(frozen=True)
class MultiCategoricalBox(Box):
    """One integer in ``[0, nvec[i])`` per position of the last dim (the first row of nvec).

    Examples:
        >>> from gpusim.specs import MultiOneHot
        >>> MultiOneHot([2, 3]).space
        MultiCategoricalBox(nvec=(2, 3))
    """

    nvec: tuple[int, ...]

    def __iter__(self) -> Iterator[CategoricalBox]:
        return iter(CategoricalBox(n) for n in self.nvec)

    def __len__(self) -> int:
        return len(self.nvec)


BoxList = MultiCategoricalBox


@dataclass(frozen=True)
class BinaryBox(Box):
    """``n`` independent 0/1 values.

    Examples:
        >>> from gpusim.specs import Binary
        >>> Binary(3).space
        BinaryBox(n=3)
    """

    n: int
