"""Discrete specs: :class:`Categorical`, :class:`OneHot` and :class:`Binary`.

Every ``rand`` is one to a few torch ops over the whole batch, so ``spec.rand()`` can serve as a
random policy on the step path.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from gpusim.kernels.categorical import categorical_rand
from gpusim.specs._common import (
    bad_msg,
    check_n,
    masked_choice,
    prep_mask,
    rand_bits,
    reject_kwargs,
    resolve_dtype,
)
from gpusim.specs.base import DEVICE_TYPING, SpecValueError, TensorSpec, check_spec_encode
from gpusim.specs.spaces import BinaryBox, CategoricalBox

__all__ = ["Categorical", "OneHot", "Binary"]


def _check_discrete_dtype(cls: str, dtype: torch.dtype, n_max: int) -> None:
    """Bool dtypes hold at most 2 categories; integer dtypes must fit ``n - 1``."""
    if dtype.is_complex:
        raise ValueError(f"{cls} cannot use a complex dtype, got dtype={dtype}")
    if dtype == torch.bool:
        if n_max > 2:
            raise ValueError(f"{cls} with dtype=torch.bool can hold at most 2 values, got n={n_max}")
    elif not dtype.is_floating_point and n_max - 1 > torch.iinfo(dtype).max:
        raise ValueError(f"{cls}: n={n_max} does not fit in dtype={dtype}")


def _not_integral(val: torch.Tensor) -> torch.Tensor | None:
    """Mask of non-integer entries of a float tensor (None for integer dtypes)."""
    if val.is_floating_point():
        return val != val.round()
    return None


# ============================================================================ Categorical
class Categorical(TensorSpec):
    """Integer values in ``[0, n)`` (one category per element of ``shape``).

    Args:
        n: number of categories (``-1``: not known yet, see :meth:`set_provisional_n`).
        shape: full shape (default ``()``), e.g. ``(4,)`` for a batch of 4.
        device: device of the tensors (default cpu).
        dtype: the dtype (default int64; ``torch.bool`` needs ``n <= 2``; float dtypes hold
            integral values).
        mask: optional bool tensor broadcastable to ``(*shape, n)``: the allowed categories.

    Raises:
        ValueError: if ``n < -1``, the dtype cannot hold ``n`` values, or the mask shape is wrong.

    Examples:
        >>> spec = Categorical(3, shape=(4,))
        >>> spec.rand().shape
        torch.Size([4])
        >>> spec.update_mask(torch.tensor([True, False, False]).expand(4, 3))
        >>> spec.rand()
        tensor([0, 0, 0, 0])
        >>> Categorical(2, shape=(4, 1), dtype=torch.bool).zero().dtype
        torch.bool
    """

    _tensor_params = (("mask", 1),)
    _plain_params = ("space",)

    def __init__(
        self,
        n: int,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.int64,
        mask: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> None:
        cls = type(self).__name__
        reject_kwargs(cls, kwargs)
        n = check_n(cls, "n", n, allow_undefined=True)
        dtype = resolve_dtype(dtype, torch.int64)
        _check_discrete_dtype(cls, dtype, n)
        self._init_common(shape, device, dtype, "discrete")
        self.space: Any = CategoricalBox(n)
        self._provisional_n: int | None = None
        self.mask = prep_mask(cls, mask, self._mask_shape(), self.device)

    def _mask_shape(self) -> torch.Size:
        return torch.Size((*self._safe_shape, self.space.n))

    def _short(self) -> str:
        return f"n={self.space.n!r}, " + super()._short().split(", ", 1)[1]

    @property
    def n(self) -> int:
        """Number of categories (the provisional one when ``n=-1``).

        Raises:
            RuntimeError: when ``n=-1`` and no provisional ``n`` was set.

        Examples:
            >>> Categorical(4, shape=(2,)).n
            4
            >>> Categorical(-1).n
            Traceback (most recent call last):
            ...
            RuntimeError: Undefined cardinality for Categorical (n=-1): call ...
        """
        n = self.space.n
        if n == -1:
            if self._provisional_n is None:
                raise RuntimeError(
                    f"Undefined cardinality for {type(self).__name__} (n=-1): call spec.set_provisional_n(n) first"
                )
            return self._provisional_n
        return n

    def set_provisional_n(self, n: int) -> None:
        """Sets the number of categories of a spec built with ``n=-1`` (in place).

        Examples:
            >>> spec = Categorical(-1)
            >>> spec.set_provisional_n(4)
            >>> spec.n
            4
        """
        self._provisional_n = check_n(type(self).__name__, "n", n)

    def cardinality(self) -> int:
        """Number of categories.

        Examples:
            >>> Categorical(5, shape=(3,)).cardinality()
            5
        """
        return self.n

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets (in place) the allowed categories; ``None`` removes the mask.

        No device sync: rows with no allowed category are not detected.

        Examples:
            >>> spec = Categorical(3)
            >>> spec.update_mask(torch.tensor([False, False, True]))
            >>> spec.rand()
            tensor(2)
        """
        self.mask = prep_mask(type(self).__name__, mask, self._mask_shape(), self.device)

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        if self.mask is not None:
            return masked_choice(self.mask, full_shape).to(self.dtype)
        n = self.n
        if n == 0:
            raise RuntimeError(f"{type(self).__name__}: cannot sample from n=0 categories")
        if self.dtype == torch.bool:
            if n == 1:
                return torch.zeros(full_shape, dtype=torch.bool, device=self.device)
            return rand_bits(full_shape, torch.bool, self.device)
        return categorical_rand(n, full_shape, self.dtype, self.device)  # packed on large CPU draws

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        n = self.space.n
        if val.dtype != torch.bool:
            frac = _not_integral(val)
            if frac is not None and bool(frac.any()):
                return "values not integral: " + bad_msg("not integers", frac, val)
            if n >= 0:
                bad = (val < 0) | (val >= n)
                if bool(bad.any()):
                    return "values out of range: " + bad_msg(f"outside [0, {n})", bad, val)
        elif n == 1 and bool(val.any()):
            return "values out of range: True is not a valid category when n=1"
        if self.mask is not None:
            mask = self.mask.to(val.device).expand(*val.shape, self.mask.shape[-1])
            ok = mask.gather(-1, val.long().unsqueeze(-1)).squeeze(-1)
            if not bool(ok.all()):
                return "values not allowed by mask: " + bad_msg("masked out", ~ok, val)
        return None

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        if val.is_floating_point():
            val = torch.nan_to_num(val.round(), nan=0.0)
        v = val.long().clamp(0, max(self.n - 1, 0))
        if self.mask is not None:
            mask = self.mask.to(val.device).expand(*v.shape, self.mask.shape[-1])
            ok = mask.gather(-1, v.unsqueeze(-1)).squeeze(-1)
            v = torch.where(ok, v, mask.to(torch.uint8).argmax(-1))
        return v.to(self.dtype)

    def index(self, index: torch.Tensor, tensor_to_index: torch.Tensor) -> torch.Tensor:
        """Picks, along the last dim of ``tensor_to_index``, the entries named by ``index``.

        Examples:
            >>> Categorical(4).index(torch.tensor([2]), torch.arange(10.0, 14.0))
            tensor([12.])
        """
        idx = index.long().expand(*tensor_to_index.shape[:-1], index.shape[-1] if index.ndim else 1)
        return tensor_to_index.gather(-1, idx)

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Converts category indices to a bool one-hot tensor (new trailing dim ``n``).

        Examples:
            >>> Categorical(3).to_one_hot(torch.tensor(1))
            tensor([False,  True, False])
        """
        if safe:
            self.assert_is_in(val)
        return F.one_hot(val.long(), self.n).bool()

    def to_categorical(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Returns ``val`` (the values are categories already).

        Args:
            val: category indices.
            safe: check ``val`` against the spec first.

        Raises:
            SpecValueError: with ``safe=True``, when ``val`` is not in the spec.

        Examples:
            >>> Categorical(3, shape=(2,)).to_categorical(torch.tensor([2, 0]))
            tensor([2, 0])
        """
        if safe:
            self.assert_is_in(val)
        return val

    def to_categorical_spec(self) -> Categorical:
        """Returns self (the spec is categorical already).

        Examples:
            >>> spec = Categorical(3)
            >>> spec.to_categorical_spec() is spec
            True
        """
        return self

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """Every category, stacked on a new leading dim: shape ``(n, *shape)``.

        Args:
            use_mask: drop the categories a (1-D) mask forbids.

        Examples:
            >>> Categorical(3).enumerate()
            tensor([0, 1, 2])
        """
        values = torch.arange(self.n, device=self.device)
        if use_mask and self.mask is not None:
            row = self.mask.reshape(-1, self.mask.shape[-1])
            if not bool((row == row[:1]).all()):
                raise ValueError("enumerate(use_mask=True) needs the same mask for every element")
            values = values[row[0]]
        count = values.numel()
        values = values.to(self.dtype).reshape(count, *([1] * self.ndim))
        return values.expand(count, *self._safe_shape).clone()

    def to_one_hot_spec(self) -> OneHot:
        """The matching :class:`OneHot` spec (shape ``(*shape, n)``; the mask is kept).

        Examples:
            >>> spec = Categorical(3, shape=(2,)).to_one_hot_spec()
            >>> type(spec).__name__, spec.shape, spec.dtype
            ('OneHot', torch.Size([2, 3]), torch.bool)
        """
        return OneHot(self.n, shape=(*self.shape, self.n), device=self.device, mask=self.mask)


# ============================================================================ OneHot
@functools.cache
def _identity(n: int, dtype: torch.dtype) -> np.ndarray | None:
    """A read-only ``n x n`` identity table of ``dtype`` in numpy (``None``: numpy lacks it)."""
    try:
        eye = torch.eye(n, dtype=dtype).numpy()
    except TypeError:  # bfloat16 and the like
        return None
    eye.flags.writeable = False
    return eye


def one_hot_rows(idx: torch.Tensor, n: int, dtype: torch.dtype) -> torch.Tensor:
    """The one-hot vectors of the indices ``idx`` (shape ``(*idx.shape, n)``, ``dtype``).

    On eager CPU: one numpy row gather from an ``n x n`` identity table (about 3 us at 4096
    rows, against 14 us for a compare with ``arange`` plus a cast); elsewhere (devices,
    ``torch.compile``, dtypes numpy lacks) the compare with ``arange``. Same values.

    Examples:
        >>> one_hot_rows(torch.tensor([2, 0]), 3, torch.int64)
        tensor([[0, 0, 1],
                [1, 0, 0]])
    """
    if idx.is_cpu and idx.dtype == torch.int64 and not torch.compiler.is_compiling():
        table = _identity(n, dtype)
        if table is not None:
            return torch.from_numpy(table.take(idx.numpy(), axis=0))
    out = idx.unsqueeze(-1) == torch.arange(n, device=idx.device)
    return out if dtype == torch.bool else out.to(dtype)


class OneHot(TensorSpec):
    """One-hot vectors of length ``n`` (the last dim); exactly one 1 per vector.

    Args:
        n: number of categories; must equal the last dim of ``shape``.
        shape: full shape (default ``(n,)``).
        device: device of the tensors (default cpu).
        dtype: dtype of the tensors (default bool).
        use_register: if True, :meth:`encode` maps any hashable value to a category, in order
            of first appearance (and :meth:`to_numpy` maps back).
        mask: optional bool tensor broadcastable to ``shape``: the allowed categories.

    Examples:
        >>> spec = OneHot(4, shape=(2, 4))
        >>> x = spec.rand()
        >>> x.sum(-1)
        tensor([1, 1])
        >>> spec.to_categorical(spec.to_one_hot(torch.tensor([3, 0])))
        tensor([3, 0])
    """

    _event_ndim = 1
    _tensor_params = (("mask", 1),)
    _plain_params = ("space", "use_register")

    def __init__(
        self,
        n: int,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.bool,
        use_register: bool = False,
        mask: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> None:
        cls = type(self).__name__
        reject_kwargs(cls, kwargs)
        n = check_n(cls, "n", n)
        shape = (n,) if shape is None else shape
        self._init_common(shape, device, resolve_dtype(dtype, torch.bool), "discrete")
        if not self.shape or self.shape[-1] != n:
            raise ValueError(f"{cls}: the last dim of shape must be n={n}, got shape={tuple(self.shape)}")
        self.space: Any = CategoricalBox(n)
        self.use_register = bool(use_register)
        self._register: dict[Any, int] = {}
        self.mask = prep_mask(cls, mask, self._safe_shape, self.device)

    @property
    def n(self) -> int:
        """Number of categories (the last dim of the shape).

        Examples:
            >>> OneHot(3, shape=(2, 3)).n
            3
        """
        return self.space.n

    def _short(self) -> str:
        return f"n={self.n!r}, " + super()._short().split(", ", 2)[2]

    def cardinality(self) -> int:
        """Number of categories: one value per category.

        Examples:
            >>> OneHot(3, shape=(2, 3)).cardinality()
            3
        """
        return self.n

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets (in place) the allowed categories (a bool tensor broadcastable to ``shape``).

        ``None`` removes the mask. No device sync: vectors with no allowed category are not
        detected.

        Examples:
            >>> spec = OneHot(3, shape=(2, 3))
            >>> spec.update_mask(torch.tensor([[True, False, False], [False, False, True]]))
            >>> spec.rand()
            tensor([[ True, False, False],
                    [False, False,  True]])
        """
        self.mask = prep_mask(type(self).__name__, mask, self._safe_shape, self.device)

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        if self.mask is not None:
            idx = masked_choice(self.mask, full_shape[:-1])
        else:
            if self.n == 0:
                raise RuntimeError(f"{type(self).__name__}: cannot sample from n=0 categories")
            idx = torch.randint(0, self.n, full_shape[:-1], device=self.device)
        return one_hot_rows(idx, self.n, self.dtype)

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        bad = (val != 0) & (val != 1)
        if bool(bad.any()):
            return "values not one-hot: " + bad_msg("not 0/1", bad, val)
        counts = val.long().sum(-1) if val.dtype == torch.bool else (val != 0).sum(-1)
        if not bool((counts == 1).all()):
            return f"values not one-hot: vectors with {counts[counts != 1][0].item()} ones"
        if self.mask is not None and bool((val.bool() & ~self.mask.to(val.device)).any()):
            return "values not allowed by mask"
        return None

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        v = val.float()
        if self.mask is not None:
            v = torch.where(self.mask.to(val.device), v, -float("inf"))
        return F.one_hot(v.argmax(-1), self.n).to(self.dtype)

    def _encoder(self, val: Any, ignore_device: bool) -> Any:
        """Category indices become one-hot vectors (as in TorchRL, tensors included); a bool
        value of the full shape is taken as one-hot already; with ``use_register`` any hashable
        value is a category."""
        if self.use_register and not isinstance(val, (torch.Tensor, np.ndarray, list)):
            return self._encode_registered
        device = None if ignore_device else self.device

        def encode(v: Any) -> torch.Tensor:
            t = v if isinstance(v, torch.Tensor) else torch.as_tensor(np.asarray(v), device=device)
            if t.dtype == torch.bool and t.ndim >= self.ndim and (t.shape[t.ndim - self.ndim :] == self.shape):
                return t.to(self.dtype)
            return self._indices_to_one_hot(t)

        return encode

    def _indices_to_one_hot(self, idx: torch.Tensor) -> torch.Tensor:
        if idx.is_floating_point():
            idx = idx.long()
        if bool((idx >= self.n).any() or (idx < 0).any()):
            raise SpecValueError(
                f"{type(self).__name__}.encode: category indices must be in [0, {self.n}), "
                f"got {idx.tolist() if idx.numel() < 16 else tuple(idx.shape)} (value must be "
                "less than action space)"
            )
        return F.one_hot(idx.long(), self.n).to(self.dtype)

    def _encode_registered(self, val: Any) -> torch.Tensor:
        if val not in self._register:
            self._register[val] = len(self._register)
        return self._indices_to_one_hot(torch.tensor(self._register[val], device=self.device))

    def to_categorical(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Category indices (int64) of one-hot vectors (argmax over the last dim).

        Args:
            val: one-hot vectors.
            safe: check ``val`` against the spec first.

        Raises:
            SpecValueError: with ``safe=True``, when ``val`` is not in the spec.

        Examples:
            >>> OneHot(3, shape=(2, 3)).to_categorical(torch.tensor([[0, 1, 0], [0, 0, 1]]))
            tensor([1, 2])
        """
        if safe:
            self.assert_is_in(val)
        return val.long().argmax(-1)

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """One-hot vectors (spec dtype) from category indices; one-hot input is returned as is.

        Examples:
            >>> OneHot(3).to_one_hot(torch.tensor(2))
            tensor([False, False,  True])
        """
        if val.ndim >= self.ndim and val.shape[val.ndim - self.ndim :] == self.shape:
            out = val
        else:
            out = F.one_hot(val.long(), self.n).to(self.dtype)
        if safe:
            self.assert_is_in(out)
        return out

    def to_one_hot_spec(self) -> OneHot:
        """Returns self (the spec is one-hot already).

        Examples:
            >>> spec = OneHot(3)
            >>> spec.to_one_hot_spec() is spec
            True
        """
        return self

    def index(self, index: torch.Tensor, tensor_to_index: torch.Tensor) -> torch.Tensor:
        """Picks, along the last dim of ``tensor_to_index``, the entries a one-hot ``index`` marks.

        Examples:
            >>> OneHot(4).index(torch.tensor([0, 0, 1, 0]).bool(), torch.arange(10.0, 14.0))
            tensor([12.])
        """
        pos = index.nonzero(as_tuple=True)[-1]
        pos = pos.expand(*tensor_to_index.shape[:-1], pos.shape[-1])
        return tensor_to_index.gather(-1, pos)

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """Every one-hot vector, stacked on a new leading dim: shape ``(n, *shape)``.

        Examples:
            >>> OneHot(2).enumerate()
            tensor([[ True, False],
                    [False,  True]])
        """
        if use_mask:
            raise NotImplementedError("OneHot.enumerate(use_mask=True) is not supported")
        eye = torch.eye(self.n, dtype=self.dtype, device=self.device)
        lead = [1] * (self.ndim - 1)
        return eye.reshape(self.n, *lead, self.n).expand(self.n, *self._safe_shape).clone()

    def to_categorical_spec(self) -> Categorical:
        """The matching :class:`Categorical` spec (shape ``shape[:-1]``; the mask is kept).

        Examples:
            >>> spec = OneHot(3, shape=(2, 3)).to_categorical_spec()
            >>> type(spec).__name__, spec.shape, spec.n
            ('Categorical', torch.Size([2]), 3)
        """
        return Categorical(self.n, shape=self.shape[:-1], device=self.device, mask=self.mask)

    def to_numpy(self, val: torch.Tensor, safe: bool | None = None) -> np.ndarray:
        """Category indices as a numpy array (the registered values with ``use_register``).

        Args:
            val: one-hot vectors.
            safe: check ``val`` against the spec first (default: the ``CHECK_SPEC_ENCODE``
                environment variable).

        Examples:
            >>> OneHot(3).to_numpy(torch.tensor([False, True, False]))
            array(1)
            >>> spec = OneHot(3, use_register=True)
            >>> left, right = spec.encode("left"), spec.encode("right")
            >>> right, spec.to_numpy(right).item()
            (tensor([False,  True, False]), 'right')
        """
        if check_spec_encode() if safe is None else safe:
            self.assert_is_in(val)
        idx = self.to_categorical(val).detach().cpu().numpy()
        if self.use_register and self._register:
            inverse = {v: k for k, v in self._register.items()}
            return np.array([inverse[int(i)] for i in idx.reshape(-1)]).reshape(idx.shape)
        return idx


# ============================================================================ Binary
class Binary(TensorSpec):
    """``n`` independent 0/1 values (the last dim).

    Args:
        n: number of bits; inferred from ``shape[-1]`` when None.
        shape: full shape (default ``(n,)``); the last dim must be ``n``. An empty shape makes a
            single 0/1 value.
        device: device of the tensors (default cpu).
        dtype: dtype (default int8).

    Raises:
        TypeError: when neither ``n`` nor ``shape`` is given.

    Examples:
        >>> spec = Binary(3, shape=(2, 3))
        >>> spec.is_in(torch.tensor([[0, 1, 1], [1, 1, 0]], dtype=torch.int8))
        True
    """

    _plain_params = ("n",)

    def __init__(
        self,
        n: int | None = None,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.int8,
        **kwargs: Any,
    ) -> None:
        cls = type(self).__name__
        reject_kwargs(cls, kwargs)
        if n is None and shape is None:
            raise TypeError(f"{cls}: must provide either n or shape")
        shape = (n,) if shape is None else shape
        self._init_common(shape, device, resolve_dtype(dtype, torch.int8), "discrete")
        if not self.shape:
            if n not in (None, 0):
                raise ValueError(f"{cls}: n must be 0 (or None) with an empty shape, got n={n}")
            self.n = 0
            return
        if n is None:
            n = self.shape[-1]
        self.n = check_n(cls, "n", n)
        if self.shape[-1] != self.n:
            raise ValueError(f"{cls}: the last dim of shape must be n={self.n}, got shape={tuple(self.shape)}")

    @property
    def _event_ndim(self) -> int:  # type: ignore[override]
        return 1 if self.shape else 0

    @property
    def space(self) -> BinaryBox:
        """The number of bits, as a :class:`BinaryBox`.

        Examples:
            >>> Binary(3, shape=(2, 3)).space
            BinaryBox(n=3)
        """
        return BinaryBox(self.n)

    def cardinality(self) -> int:
        """2: as in TorchRL, the outcomes are "every bit 0" and "every bit 1" (see
        :meth:`enumerate`), not the ``2 ** n`` bit patterns.

        Examples:
            >>> Binary(4).cardinality()
            2
        """
        return 2

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """The two outcomes of :meth:`cardinality` (all zeros, all ones): shape ``(2, *shape)``.

        Examples:
            >>> Binary(2).enumerate()
            tensor([[0, 0],
                    [1, 1]], dtype=torch.int8)
        """
        values = torch.arange(2, device=self.device).to(self.dtype)
        return values.reshape(2, *([1] * self.ndim)).expand(2, *self._safe_shape).clone()

    def unsqueeze(self, dim: int) -> Binary:
        """Inserts a size-1 dim at ``dim``, the last position included: the bits are independent,
        so any shape of 0/1 values is a Binary (``n`` becomes the new last dim), as in TorchRL.

        Examples:
            >>> spec = Binary(3, shape=(2, 3)).unsqueeze(-1)
            >>> spec.shape, spec.n
            (torch.Size([2, 3, 1]), 1)
        """
        d = dim + self.ndim + 1 if dim < 0 else dim
        if not 0 <= d <= self.ndim:
            raise ValueError(f"unsqueeze: dim {dim} is out of range for Binary with shape {tuple(self.shape)}")
        shape = (*self.shape[:d], 1, *self.shape[d:])
        return Binary(shape=shape, device=self.device, dtype=self.dtype)

    def squeeze(self, dim: int | None = None) -> Binary:
        """Removes size-1 dims (``dim`` or all of them), the last one included (see :meth:`unsqueeze`).

        Examples:
            >>> Binary(1, shape=(2, 1)).squeeze().shape
            torch.Size([2])
        """
        if dim is None:
            shape = tuple(s for s in self.shape if s != 1)
        else:
            d = dim + self.ndim if dim < 0 else dim
            if not 0 <= d < self.ndim:
                raise ValueError(f"squeeze: dim {dim} is out of range for Binary with shape {tuple(self.shape)}")
            shape = tuple(s for i, s in enumerate(self.shape) if i != d or s != 1)
        if shape == tuple(self.shape):
            return self
        return Binary(shape=shape, device=self.device, dtype=self.dtype)

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        return rand_bits(full_shape, self.dtype, self.device)

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        bad = (val != 0) & (val != 1)
        if bool(bad.any()):
            return "values not binary: " + bad_msg("not 0/1", bad, val)
        return None

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        if val.dtype == torch.bool:
            return val.to(self.dtype)
        v = torch.nan_to_num(val.float(), nan=0.0)
        return (v > 0.5).to(self.dtype)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Categorical):
            return (
                other.space.n == 2
                and other.mask is None
                and (self.shape, self.dtype, self.device) == (other.shape, other.dtype, other.device)
            )
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]
