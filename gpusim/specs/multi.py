"""Multi-category specs: :class:`MultiCategorical` (indices) and :class:`MultiOneHot` (segments)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from gpusim.specs._common import (
    bad_msg,
    check_n,
    masked_choice,
    prep_mask,
    reject_kwargs,
    resolve_dtype,
)
from gpusim.specs.base import DEVICE_TYPING, SpecValueError, TensorSpec
from gpusim.specs.discrete import _check_discrete_dtype, _not_integral
from gpusim.specs.spaces import MultiCategoricalBox, squash

__all__ = ["MultiCategorical", "MultiOneHot"]


def _check_nvec_list(cls: str, nvec: Any) -> tuple[int, ...]:
    if isinstance(nvec, torch.Tensor):
        if nvec.ndim > 1:
            raise ValueError(f"{cls}: nvec must be 1-D, got shape {tuple(nvec.shape)}")
        nvec = nvec.reshape(-1).tolist()
    if isinstance(nvec, (int, np.integer)):
        nvec = [nvec]
    nvec = list(np.asarray(nvec).reshape(-1).tolist()) if isinstance(nvec, np.ndarray) else list(nvec)
    if not nvec:
        raise ValueError(f"{cls}: nvec must not be empty")
    return tuple(check_n(cls, "nvec entry", n) for n in nvec)


def _segments(nvec: Sequence[int]):  # noqa: ANN202
    off = 0
    for i, n in enumerate(nvec):
        yield i, off, n
        off += n


# ============================================================================ MultiCategorical
class MultiCategorical(TensorSpec):
    """One integer in ``[0, nvec[..., i])`` per position ``i`` of the last dim.

    ``nvec`` may have several dims (one count per element, as in TorchRL): it is broadcast to
    the spec shape and stored that way (``spec.nvec``).

    Args:
        nvec: category counts, an int, a (nested) list or a tensor; its last dim is the number of
            positions.
        shape: full shape (default ``nvec``'s shape); it must end with ``nvec.shape[-1]``.
        device: device of the tensors (default cpu).
        dtype: the dtype (default int64; float dtypes hold integral values).
        mask: optional bool tensor broadcastable to ``(*shape[:-1], sum(nvec))`` (the same
            ``nvec`` for every element is needed then).
        remove_singleton: as in TorchRL, a spec of shape ``(1,)`` samples without the trailing
            size-1 dim.

    Examples:
        >>> spec = MultiCategorical([2, 5], shape=(3, 2))
        >>> x = spec.rand()
        >>> bool((x[:, 0] < 2).all() and (x[:, 1] < 5).all())
        True
        >>> MultiCategorical([[1, 2], [3, 4]]).rand().shape
        torch.Size([2, 2])
    """

    _event_ndim = 1
    _tensor_params = (("nvec", 1), ("mask", 1))

    def __init__(
        self,
        nvec: Any,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.int64,
        mask: torch.Tensor | None = None,
        remove_singleton: bool = True,
        **kwargs: Any,
    ) -> None:
        cls = type(self).__name__
        reject_kwargs(cls, kwargs)
        if isinstance(nvec, torch.Tensor):
            nv = nvec.detach().long()
        else:
            try:
                nv = torch.as_tensor(np.asarray(nvec), dtype=torch.long)
            except (TypeError, ValueError) as err:
                raise ValueError(f"{cls}: nvec must be a (nested) list of ints, got {nvec!r}") from err
        if nv.ndim == 0:
            nv = nv.unsqueeze(0)
        if nv.numel() == 0:
            raise ValueError(f"{cls}: nvec must not be empty")
        bad = nv < 0
        if bool(bad.any()):
            raise ValueError(f"{cls}: nvec entries must be >= 0, got nvec entry={nv[bad][0].item()}")
        self._init_common(nv.shape if shape is None else shape, device, resolve_dtype(dtype, torch.int64), "discrete")
        if not self.shape or self.shape[-1] != nv.shape[-1]:
            raise ValueError(
                f"{cls}: the last dim of shape must be len(nvec)={nv.shape[-1]}, got shape={tuple(self.shape)}"
            )
        _check_discrete_dtype(cls, self.dtype, int(nv.max()))
        safe = self._safe_shape
        try:
            nv = nv.to(self.device).expand(safe)
        except RuntimeError:
            rows = nv.reshape(-1, nv.shape[-1])
            if not bool((rows == rows[:1]).all()):
                raise ValueError(
                    f"{cls}: nvec of shape {tuple(nv.shape)} does not broadcast to shape {tuple(self.shape)}"
                ) from None
            nv = rows[0].to(self.device).expand(safe)
        self.nvec = nv
        self.remove_singleton = bool(remove_singleton)
        self._post_replace()
        self.mask = None if mask is None else prep_mask(cls, mask, self._mask_shape(), self.device)

    def _post_replace(self) -> None:
        rows = squash(self.nvec).reshape(-1, self.nvec.shape[-1])
        if rows.shape[0] == 0:  # an empty batch keeps the counts it was built with
            return
        same = bool((rows == rows[:1]).all())
        self._row: tuple[int, ...] | None = tuple(rows[0].tolist()) if same else None

    def _homogeneous(self, what: str) -> tuple[int, ...]:
        if self._row is None:
            raise ValueError(
                f"{type(self).__name__}.{what} needs the same nvec for every element, got nvec={self.nvec.tolist()}"
            )
        return self._row

    def _mask_shape(self) -> torch.Size:
        row = self._homogeneous("mask")
        return torch.Size((*self._safe_shape[:-1], sum(row)))

    def _short(self) -> str:
        nvec = list(self._row) if self._row is not None else self.nvec.tolist()
        return f"nvec={nvec}, " + super()._short()

    @property
    def n(self) -> int:
        """Number of positions (the last dim).

        Examples:
            >>> MultiCategorical([2, 3], shape=(4, 2)).n
            2
        """
        return self.shape[-1]

    @property
    def space(self) -> MultiCategoricalBox:
        """The category counts of one element (or of every element, nested, when they differ).

        Examples:
            >>> MultiCategorical([2, 3], shape=(4, 2)).space
            MultiCategoricalBox(nvec=(2, 3))
            >>> MultiCategorical([[1, 2], [3, 4]]).space
            MultiCategoricalBox(nvec=((1, 2), (3, 4)))
        """
        if self._row is not None:
            return MultiCategoricalBox(self._row)
        return MultiCategoricalBox(tuple(_to_tuples(self.nvec.tolist())))

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets (in place) the allowed categories, concatenated over positions.

        The mask has last dim ``sum(nvec)`` (the same ``nvec`` for every element is needed);
        ``None`` removes it.

        Examples:
            >>> spec = MultiCategorical([2, 3])
            >>> spec.update_mask(torch.tensor([False, True, True, False, False]))
            >>> spec.rand()
            tensor([1, 0])
        """
        if mask is None:
            self.mask = None
            return
        self.mask = prep_mask(type(self).__name__, mask, self._mask_shape(), self.device)

    def cardinality(self) -> int:
        """The number of joint outcomes, ``prod(nvec)``.

        Examples:
            >>> MultiCategorical([2, 3]).cardinality()
            6
        """
        return int(np.prod(self._homogeneous("cardinality()")))

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """Every joint outcome, stacked on a new leading dim: shape ``(prod(nvec), *shape)``.

        Examples:
            >>> MultiCategorical([2, 2]).enumerate()
            tensor([[0, 0],
                    [0, 1],
                    [1, 0],
                    [1, 1]])
        """
        if use_mask or self.mask is not None:
            raise RuntimeError("enumerate is not supported for a masked MultiCategorical spec")
        row = self._homogeneous("enumerate()")
        grids = torch.meshgrid(*[torch.arange(n, device=self.device) for n in row], indexing="ij")
        values = torch.stack([g.reshape(-1) for g in grids], -1).to(self.dtype)
        count = values.shape[0]
        values = values.reshape(count, *([1] * (self.ndim - 1)), len(row))
        return values.expand(count, *self._safe_shape).clone()

    def _squeezes(self) -> bool:
        return self.remove_singleton and self.shape == torch.Size([1])

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        if self.mask is None:
            nv = squash(self.nvec)
            if bool((nv == 0).any()):
                raise RuntimeError(f"{type(self).__name__}: cannot sample with a 0 in nvec")
            r = torch.rand(full_shape, device=self.device)
            out = torch.minimum((r * nv).floor_(), (nv - 1).to(r.dtype)).to(self.dtype)
        else:
            outs = [
                masked_choice(self.mask[..., off : off + n], full_shape[:-1])
                for _, off, n in _segments(self._homogeneous("rand() with a mask"))
            ]
            out = torch.stack(outs, -1).to(self.dtype)
        return out.squeeze(-1) if self._squeezes() else out

    def _shape_reason(self, val: Any) -> str | None:
        if self._squeezes() and isinstance(val, torch.Tensor) and val.shape[-1:] != (1,):
            val = val.unsqueeze(-1)
        return super()._shape_reason(val)

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        if self._squeezes() and val.shape[-1:] != (1,):
            val = val.unsqueeze(-1)
        frac = _not_integral(val)
        if frac is not None and bool(frac.any()):
            return "values not integral: " + bad_msg("not integers", frac, val)
        nvec = squash(self.nvec).to(val.device)
        bad = (val < 0) | (val >= nvec)
        if bool(bad.any()):
            return "values out of range: " + bad_msg("outside [0, nvec)", bad, val)
        if self.mask is not None:
            mask = self.mask.to(val.device).expand(*val.shape[:-1], -1)
            offsets = torch.tensor([off for _, off, _ in _segments(self._homogeneous("is_in"))], device=val.device)
            ok = mask.gather(-1, val.long() + offsets)
            if not bool(ok.all()):
                return "values not allowed by mask"
        return None

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        squeeze = self._squeezes() and val.shape[-1:] != (1,)
        if squeeze:
            val = val.unsqueeze(-1)
        if val.is_floating_point():
            val = torch.nan_to_num(val.round(), nan=0.0)
        nvec = squash(self.nvec).to(val.device)
        v = torch.maximum(torch.minimum(val.long(), nvec - 1), torch.zeros_like(nvec))
        if self.mask is not None:
            mask = self.mask.to(val.device).expand(*v.shape[:-1], -1)
            cols = []
            for i, off, n in _segments(self._homogeneous("project")):
                seg = mask[..., off : off + n]
                vi = v[..., i]
                ok = seg.gather(-1, vi.unsqueeze(-1)).squeeze(-1)
                cols.append(torch.where(ok, vi, seg.to(torch.uint8).argmax(-1)))
            v = torch.stack(cols, -1)
        v = v.to(self.dtype)
        return v.squeeze(-1) if squeeze else v

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Concatenated bool one-hot segments (last dim ``sum(nvec)``).

        Args:
            val: category indices, one per position.
            safe: check ``val`` against the spec first.

        Examples:
            >>> MultiCategorical([2, 3]).to_one_hot(torch.tensor([1, 2]))
            tensor([False,  True, False, False,  True])
        """
        if safe:
            self.assert_is_in(val)
        row = self._homogeneous("to_one_hot")
        return torch.cat([F.one_hot(val[..., i].long(), n) for i, _, n in _segments(row)], -1).bool()

    def to_one_hot_spec(self) -> MultiOneHot:
        """The matching :class:`MultiOneHot` spec (last dim ``sum(nvec)``; the mask is kept).

        Examples:
            >>> spec = MultiCategorical([2, 3], shape=(4, 2)).to_one_hot_spec()
            >>> type(spec).__name__, spec.shape, spec.nvec
            ('MultiOneHot', torch.Size([4, 5]), (2, 3))
        """
        row = self._homogeneous("to_one_hot_spec")
        return MultiOneHot(row, shape=(*self.shape[:-1], sum(row)), device=self.device, mask=self.mask)

    def to_categorical(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Returns ``val`` (the values are categories already).

        Args:
            val: category indices, one per position.
            safe: check ``val`` against the spec first.

        Raises:
            SpecValueError: with ``safe=True``, when ``val`` is not in the spec.

        Examples:
            >>> MultiCategorical([2, 3]).to_categorical(torch.tensor([1, 2]))
            tensor([1, 2])
        """
        if safe:
            self.assert_is_in(val)
        return val

    def to_categorical_spec(self) -> MultiCategorical:
        """Returns self (the spec is categorical already).

        Examples:
            >>> spec = MultiCategorical([2, 3])
            >>> spec.to_categorical_spec() is spec
            True
        """
        return self


def _to_tuples(x: Any) -> Any:
    return tuple(_to_tuples(v) for v in x) if isinstance(x, list) else x


# ============================================================================ MultiOneHot
class MultiOneHot(TensorSpec):
    """Concatenated one-hot segments of lengths ``nvec`` (last dim ``sum(nvec)``).

    Args:
        nvec: segment lengths.
        shape: full shape (default ``(sum(nvec),)``); the last dim must be ``sum(nvec)``.
        device: device of the tensors (default cpu).
        dtype: dtype of the tensors (default bool).
        use_register: accepted for TorchRL compatibility (compared by ``==``).
        mask: optional bool tensor broadcastable to ``shape``: the allowed categories.

    Examples:
        >>> spec = MultiOneHot([2, 3])
        >>> x = spec.rand()
        >>> x[:2].sum().item(), x[2:].sum().item()
        (1, 1)
    """

    _event_ndim = 1
    _tensor_params = (("mask", 1),)
    _plain_params = ("nvec", "use_register")

    def __init__(
        self,
        nvec: Sequence[int] | torch.Tensor,
        shape: Any = None,
        device: DEVICE_TYPING | None = None,
        dtype: torch.dtype | None = torch.bool,
        use_register: bool = False,
        mask: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> None:
        cls = type(self).__name__
        reject_kwargs(cls, kwargs)
        self.nvec = _check_nvec_list(cls, nvec)
        total = sum(self.nvec)
        shape = (total,) if shape is None else shape
        self._init_common(shape, device, resolve_dtype(dtype, torch.bool), "discrete")
        if not self.shape or self.shape[-1] != total:
            raise ValueError(f"{cls}: the last dim of shape must be sum(nvec)={total}, got shape={tuple(self.shape)}")
        self.use_register = bool(use_register)
        self.mask = prep_mask(cls, mask, self._safe_shape, self.device)

    def _short(self) -> str:
        return f"nvec={list(self.nvec)}, " + super()._short().split(", ", 2)[2]

    @property
    def n(self) -> int:
        """Total length ``sum(nvec)`` (the last dim).

        Examples:
            >>> MultiOneHot([2, 3]).n
            5
        """
        return sum(self.nvec)

    @property
    def space(self) -> MultiCategoricalBox:
        """The segment lengths, as a :class:`MultiCategoricalBox`.

        Examples:
            >>> MultiOneHot([2, 3]).space
            MultiCategoricalBox(nvec=(2, 3))
        """
        return MultiCategoricalBox(self.nvec)

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets (in place) the allowed categories (bool tensor broadcastable to ``shape``).

        ``None`` removes the mask.

        Examples:
            >>> spec = MultiOneHot([2, 3])
            >>> spec.update_mask(torch.tensor([False, True, True, False, False]))
            >>> spec.rand()
            tensor([False,  True,  True, False, False])
        """
        self.mask = prep_mask(type(self).__name__, mask, self._safe_shape, self.device)

    def cardinality(self) -> int:
        """The number of joint outcomes, ``prod(nvec)``.

        Examples:
            >>> MultiOneHot([2, 3]).cardinality()
            6
        """
        return int(np.prod(self.nvec))

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """Every joint outcome, stacked on a new leading dim: shape ``(prod(nvec), *shape)``.

        Examples:
            >>> MultiOneHot([1, 2]).enumerate().int()
            tensor([[1, 1, 0],
                    [1, 0, 1]], dtype=torch.int32)
        """
        cats = self.to_categorical_spec()
        cats.update_mask(None)
        return self.to_one_hot(cats.enumerate(use_mask))

    def _split(self, val: torch.Tensor) -> list[torch.Tensor]:
        return list(val.split(list(self.nvec), dim=-1))

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        lead = full_shape[:-1]
        if self.mask is None:
            if 0 in self.nvec:
                raise RuntimeError(f"{type(self).__name__}: cannot sample with a 0 in nvec")
            nv = torch.tensor(self.nvec, device=self.device)
            r = torch.rand((*lead, len(self.nvec)), device=self.device)
            idx = torch.minimum((r * nv).long(), nv - 1)
        else:
            idx = torch.stack([masked_choice(m, lead) for m in self._split(self.mask)], -1)
        offsets = torch.tensor([off for _, off, _ in _segments(self.nvec)], device=self.device)
        out = torch.zeros(full_shape, dtype=self.dtype, device=self.device)
        return out.scatter_(-1, idx + offsets, 1)

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        bad = (val != 0) & (val != 1)
        if bool(bad.any()):
            return "values not one-hot: " + bad_msg("not 0/1", bad, val)
        for i, seg in enumerate(self._split(val)):
            if not bool(((seg != 0).sum(-1) == 1).all()):
                return f"values not one-hot: segment {i} (n={self.nvec[i]}) has not exactly one 1"
        if self.mask is not None and bool((val.bool() & ~self.mask.to(val.device)).any()):
            return "values not allowed by mask"
        return None

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        v = val.float()
        if self.mask is not None:
            v = torch.where(self.mask.to(val.device), v, -float("inf"))
        segs = [F.one_hot(s.argmax(-1), n) for s, n in zip(self._split(v), self.nvec)]
        return torch.cat(segs, -1).to(self.dtype)

    def to_categorical(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Per-segment category indices (int64, last dim ``len(nvec)``).

        Args:
            val: concatenated one-hot segments.
            safe: check ``val`` against the spec first.

        Raises:
            SpecValueError: with ``safe=True``, when ``val`` is not in the spec.

        Examples:
            >>> MultiOneHot([2, 3]).to_categorical(torch.tensor([0, 1, 0, 0, 1]).bool())
            tensor([1, 2])
        """
        if safe:
            self.assert_is_in(val)
        return torch.stack([s.long().argmax(-1) for s in self._split(val)], -1)

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """One-hot segments (spec dtype) from per-segment indices; one-hot input is returned as
        is.

        Args:
            val: per-segment category indices (last dim ``len(nvec)``), or one-hot segments.
            safe: check the result against the spec.

        Examples:
            >>> MultiOneHot([2, 3]).to_one_hot(torch.tensor([1, 2]))
            tensor([False,  True, False, False,  True])
        """
        if val.ndim >= self.ndim and val.shape[val.ndim - self.ndim :] == self.shape:
            out = val
        else:
            out = torch.cat([F.one_hot(val[..., i].long(), n) for i, n in enumerate(self.nvec)], -1).to(self.dtype)
        if safe:
            self.assert_is_in(out)
        return out

    def to_one_hot_spec(self) -> MultiOneHot:
        """Returns self (the spec is one-hot already).

        Examples:
            >>> spec = MultiOneHot([2, 3])
            >>> spec.to_one_hot_spec() is spec
            True
        """
        return self

    def to_categorical_spec(self) -> MultiCategorical:
        """The matching :class:`MultiCategorical` spec (last dim ``len(nvec)``; the mask is kept).

        Examples:
            >>> spec = MultiOneHot([2, 3], shape=(4, 5)).to_categorical_spec()
            >>> type(spec).__name__, spec.shape, spec.space
            ('MultiCategorical', torch.Size([4, 2]), MultiCategoricalBox(nvec=(2, 3)))
        """
        return MultiCategorical(self.nvec, shape=(*self.shape[:-1], len(self.nvec)), device=self.device, mask=self.mask)

    def _encoder(self, val: Any, ignore_device: bool) -> Any:
        """Per-segment indices become one-hot segments reshaped to the spec shape (as in
        TorchRL); a bool value of the full shape is taken as one-hot already."""
        device = None if ignore_device else self.device

        def encode(v: Any) -> torch.Tensor:
            t = v if isinstance(v, torch.Tensor) else torch.as_tensor(np.asarray(v), device=device)
            if t.dtype == torch.bool and t.ndim >= self.ndim and (t.shape[t.ndim - self.ndim :] == self.shape):
                return t.to(self.dtype)
            if t.ndim == 0 or t.shape[-1] != len(self.nvec):
                raise RuntimeError(
                    f"{type(self).__name__}.encode: expected per-segment indices with a last dim "
                    f"of len(nvec)={len(self.nvec)}, got shape {tuple(t.shape)}"
                )
            nv = torch.tensor(self.nvec, device=t.device)
            if bool(((t < 0) | (t >= nv)).any()):
                raise SpecValueError(
                    f"{type(self).__name__}.encode: indices must be in [0, nvec={list(self.nvec)}), "
                    f"got {t.tolist() if t.numel() < 16 else tuple(t.shape)}"
                )
            out = self.to_one_hot(t.long())
            try:
                return out.reshape(self.shape)
            except RuntimeError as err:
                raise RuntimeError(
                    f"{type(self).__name__}.encode: the one-hot value of shape {tuple(out.shape)} "
                    f"does not fit the spec shape {tuple(self.shape)}: {err}"
                ) from err

        return encode

    def to_numpy(self, val: torch.Tensor, safe: bool | None = None) -> np.ndarray:
        """Per-segment indices as a numpy array (what gymnasium ``MultiDiscrete`` expects).

        Args:
            val: concatenated one-hot segments.
            safe: check ``val`` against the spec first.

        Examples:
            >>> MultiOneHot([2, 3]).to_numpy(torch.tensor([0, 1, 0, 0, 1]).bool())
            array([1, 2])
        """
        return self.to_categorical(val, safe).detach().cpu().numpy()
