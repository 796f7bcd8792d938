"""Lazy stacks of specs: :class:`Stacked` (leaves) and what it shares with
:class:`~gpusim.specs.StackedComposite`.

``torch.stack(specs, dim)`` returns a dense spec (the first one expanded) when the specs are all
equal, and a lazy stack otherwise: the stacked specs keep their own shapes (dims where they differ
show as ``-1``), keys (a :class:`StackedComposite` exposes the keys every spec has) and bounds.
Indexing a lazy stack is only allowed along the stack dim; it returns the stacked spec itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from gpusim.specs._shapes import DYNAMIC, as_size, expand_index, shape_args
from gpusim.specs.base import TensorSpec, check_spec_encode
from gpusim.specs.composite import Composite

__all__ = ["Stacked"]


def _is_spec(x: Any) -> bool:
    return isinstance(x, (TensorSpec, Composite))


def _trivial(item: Any) -> bool:
    return (
        isinstance(item, slice)
        and item.start is None
        and item.stop is None
        and item.step
        in (
            None,
            1,
        )
    )


class _LazyStack:
    """What :class:`Stacked` and :class:`StackedComposite` share: the specs, the stack dim and
    the indexing / shape ops along it."""

    _specs: list

    def _init_stack(self, specs: tuple, dim: int) -> None:
        if not specs:
            raise ValueError(f"{type(self).__name__} needs at least one spec")
        object.__setattr__(self, "_specs", list(specs))
        ndim = len(specs[0].shape) + 1
        d = dim + ndim if dim < 0 else dim
        if not 0 <= d < ndim:
            raise ValueError(f"{type(self).__name__}: stack dim {dim} is out of range for {ndim} dims")
        object.__setattr__(self, "_dim", d)

    @property
    def dim(self) -> int:
        """The stack dim.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.dim
            0
        """
        return self._dim

    @property
    def stack_dim(self) -> int:
        """The stack dim (same as :attr:`dim`).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.stack_dim
            0
        """
        return self._dim

    def __len__(self) -> int:
        return self.shape[0]

    def _stack_index(self, item: Any) -> Any:
        """Indexing along the stack dim: an int gives the stacked spec itself."""
        cls = type(self).__name__
        if not isinstance(item, tuple):
            if self._dim != 0:
                raise IndexError(f"Trying to index a {cls} along dimension 0 when the stack dimension is {self._dim}.")
            return self._pick(item)
        if any(i is None for i in item):
            raise IndexError(f"Cannot index a {cls} with None values")
        nidx = expand_index(item, self.ndim)
        picks = [(i, it) for i, it in enumerate(nidx) if not _trivial(it)]
        if not picks:
            return self
        if len(picks) > 1 or picks[0][0] != self._dim:
            if item and item[0] is Ellipsis:
                raise IndexError(
                    f"Indexing a {cls} with [..., idx] is only permitted if the stack dimension is "
                    f"the last dimension. Got self.dim={self._dim} and self.shape={tuple(self.shape)}."
                )
            raise IndexError(
                f"Got a non-trivial index at dim {picks[0][0]} when only the dim {self._dim} could "
                f"be indexed in {cls} (index {item!r})."
            )
        return self._pick(picks[0][1])

    def _pick(self, item: Any) -> Any:
        if isinstance(item, torch.Tensor):
            item = item.tolist()
        if isinstance(item, (list, np.ndarray)):
            return torch.stack([self._specs[int(i)] for i in np.asarray(item).reshape(-1)], self._dim)
        out = self._specs[item]
        if _is_spec(out):
            return out
        return torch.stack(list(out), self._dim)

    def _restack(self, specs: list, dim: int) -> Any:
        return torch.stack(specs, dim)

    def clone(self) -> Any:
        """A copy (every stacked spec cloned).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> copy = spec.clone()
            >>> copy == spec, copy[0] is spec[0]
            (True, False)
        """
        return self._restack([s.clone() for s in self._specs], self._dim)

    def to(self, dest: Any) -> Any:
        """The stack of every stacked spec moved to a device or cast to a dtype (self for None).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.to(torch.float64).dtype
            torch.float64
        """
        if dest is None:
            return self
        return self._restack([s.to(dest) for s in self._specs], self._dim)

    def cpu(self) -> Any:
        """The stack of every stacked spec on the cpu.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.cpu().device
            device(type='cpu')
        """
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> Any:
        """The stack of every stacked spec on a CUDA device (``device`` ordinal, default current).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> spec = torch.stack([Unbounded(shape=(3,)), Unbounded(shape=(2,))], 0)
            >>> spec.cuda(0).device  # Unbounded specs hold no tensor: runs without a GPU too
            device(type='cuda', index=0)
        """
        return self.to("cuda" if device is None else torch.device("cuda", device))

    def clear_device_(self) -> Any:
        """Clears the device of every stacked spec; returns self.

        Leaf specs always keep a device; stacked Composites lose theirs.

        Examples:
            >>> from gpusim.specs import Composite, Unbounded
            >>> a = Composite(x=Unbounded(), device="cpu")
            >>> b = Composite(x=Unbounded(), y=Unbounded(), device="cpu")
            >>> torch.stack([a, b], 0).clear_device_().device is None
            True
        """
        for spec in self._specs:
            spec.clear_device_()
        return self

    def unbind(self, dim: int = 0) -> tuple:
        """Splits along ``dim``: along the stack dim, the stacked specs themselves.

        Raises:
            ValueError: for a dim out of range or a dynamic (``-1``) dim.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.unbind(0)[1] is spec[1]
            True
            >>> [part.shape for part in spec.unbind(1)]
            [torch.Size([2]), torch.Size([2]), torch.Size([2])]
        """
        d = dim + self.ndim if dim < 0 else dim
        if not 0 <= d < self.ndim or self.shape[d] == DYNAMIC:
            raise ValueError(f"Provided dim {dim} is not valid for unbinding shape {tuple(self.shape)}")
        if d == self._dim:
            return tuple(self._specs)
        inner = d - 1 if d > self._dim else d
        new_dim = self._dim if d > self._dim else self._dim - 1
        parts = [s.unbind(inner) for s in self._specs]
        return tuple(self._restack(list(group), new_dim) for group in zip(*parts))

    def unsqueeze(self, dim: int) -> Any:
        """Inserts a size-1 dim (the stacked specs are unsqueezed).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.unsqueeze(0).shape, spec.unsqueeze(-1).shape
            (torch.Size([1, 2, 3]), torch.Size([2, 3, 1]))
        """
        d = dim + self.ndim + 1 if dim < 0 else dim
        if not 0 <= d <= self.ndim:
            raise ValueError(f"Cannot unsqueeze {type(self).__name__} along dim {dim}.")
        if d > self._dim:
            return self._restack([s.unsqueeze(d - 1) for s in self._specs], self._dim)
        return self._restack([s.unsqueeze(d) for s in self._specs], self._dim + 1)

    def squeeze(self, dim: int | None = None) -> Any:
        """Removes size-1 dims (a size-1 stack dim gives the single stacked spec).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.unsqueeze(-1).squeeze().shape
            torch.Size([2, 3])
        """
        shape = self.shape
        if dim is None:
            if 1 not in shape:
                return self
            return self.squeeze(list(shape).index(1)).squeeze()
        d = dim + self.ndim if dim < 0 else dim
        if not 0 <= d < self.ndim:
            raise ValueError(f"squeeze: dim {dim} is out of range for shape {tuple(shape)}")
        if shape[d] != 1:
            return self
        if d == self._dim:
            return self._specs[0]
        if d > self._dim:
            return self._restack([s.squeeze(d - 1) for s in self._specs], self._dim)
        return self._restack([s.squeeze(d) for s in self._specs], self._dim - 1)

    def _expand_stack(self, *shape: Any) -> Any:
        new = list(shape_args(shape))
        cur = self.shape
        if len(new) < len(cur):
            raise ValueError(f"expand: {tuple(new)} has fewer dims than {tuple(cur)}")
        lead = new[: len(new) - len(cur)]
        tail = new[len(new) - len(cur) :]
        for i, (c, n) in enumerate(zip(cur, tail)):
            if i == self._dim and c == 1 and n != 1:
                return self._restack([self._specs[0].clone() for _ in range(n)], self._dim).expand(*new)
            if n != c and c != 1 and not (c == DYNAMIC and n == DYNAMIC):
                raise ValueError(
                    f"expand: the last {len(cur)} of the expanded shape {tuple(new)} must match the "
                    f"shape {tuple(cur)} of the {type(self).__name__} (only size-1 dims can grow)"
                )
        unstacked = [n for i, n in enumerate(tail) if i != self._dim]
        specs = []
        for spec in self._specs:
            target = [u if u != DYNAMIC else s for u, s in zip(unstacked, spec.shape)]
            specs.append(spec.expand(*lead, *target))
        return self._restack(specs, self._dim + len(lead))

    def make_neg_dim(self, dim: int) -> None:
        """Turns a (non-stack) dim of every stacked spec into a dynamic dim, in place.

        Raises:
            ValueError: for the stack dim or a dim out of range.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.make_neg_dim(1)
            >>> spec.shape
            torch.Size([2, -1])
        """
        d = dim + self.ndim if dim < 0 else dim
        if not 0 <= d < self.ndim:
            raise ValueError(f"dim={dim} is out of bound for ndim={self.ndim}")
        if d == self._dim:
            raise ValueError("Cannot make the stack dim dynamic")
        for spec in self._specs:
            spec.make_neg_dim(d if d < self._dim else d - 1)

    def _value_dim(self, value: Any) -> int:
        return len(value.shape) - self.ndim + self._dim

    def _unbind_value(self, value: Any) -> list:
        if isinstance(value, torch.Tensor) and value.is_nested:
            return list(value.unbind(0))
        return list(value.unbind(self._value_dim(value)))

    def _stack_values(self, samples: list, dim: int) -> Any:
        raise NotImplementedError


class Stacked(_LazyStack, TensorSpec):
    """A lazy stack of leaf specs of one class that differ (in shape, bounds, ...).

    Built by ``torch.stack`` on unequal specs. Dims where the stacked shapes differ show as ``-1``.
    Samples are stacked densely when the shapes agree, else they form a nested tensor (stack dim
    0 only).

    Args:
        *specs: the stacked specs (same class, dtype, device and number of dims).
        dim: the stack dim.

    Examples:
        >>> from gpusim.specs import Unbounded
        >>> spec = torch.stack([Unbounded(shape=(3,)), Unbounded(shape=(2,))], 0)
        >>> type(spec).__name__, spec.shape
        ('Stacked', torch.Size([2, -1]))
        >>> spec[1].shape
        torch.Size([2])
    """

    def __init__(self, *specs: TensorSpec, dim: int) -> None:
        self._init_stack(specs, dim)
        self.dtype = specs[0].dtype
        self.domain = specs[0].domain
        self._memo = None

    @property
    def shape(self) -> torch.Size:  # type: ignore[override]
        """Per-dim shape of the stacked specs (``-1`` where they differ), with the stack dim.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> torch.stack([Unbounded(shape=(3,)), Unbounded(shape=(2,))], 0).shape
            torch.Size([2, -1])
        """
        first = self._specs[0].shape
        dims = [s if all(spec.shape[i] == s for spec in self._specs[1:]) else DYNAMIC for i, s in enumerate(first)]
        dims.insert(self._dim, len(self._specs))
        return torch.Size(dims)

    @shape.setter
    def shape(self, value: Any) -> None:
        value = as_size(value)
        if len(value) != self.ndim or value[self._dim] != len(self._specs):
            raise RuntimeError(f"Stacked: cannot set shape {tuple(value)} on a stack of shape {tuple(self.shape)}")
        inner = torch.Size(s for i, s in enumerate(value) if i != self._dim)
        for spec in self._specs:
            spec.shape = inner

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        """The device of the stacked specs.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.device
            device(type='cpu')
        """
        return self._specs[0].device

    @property
    def space(self) -> Any:
        """A lazy stack has no single space (index it to get a stacked spec's space).

        Raises:
            NotImplementedError: always.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec[1].space.high
            tensor([2., 2., 2.])
            >>> spec.space
            Traceback (most recent call last):
            ...
            NotImplementedError: Stacked specs have no space; index the stack first
        """
        raise NotImplementedError("Stacked specs have no space; index the stack first")

    def __getitem__(self, idx: Any) -> Any:
        """Indexes along the stack dim (an int gives the stacked spec itself)."""
        return self._stack_index(idx)

    def expand(self, *shape: Any) -> Any:
        """Expands every stacked spec (``-1`` keeps a stacked spec's own extent).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.expand(4, 2, 3).shape
            torch.Size([4, 2, 3])
        """
        return self._expand_stack(*shape)

    def reshape(self, *shape: Any) -> Any:
        """Lazy stacks cannot be reshaped (``view`` is the same method).

        Raises:
            NotImplementedError: always.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.reshape(6)
            Traceback (most recent call last):
            ...
            NotImplementedError: reshape is not implemented for Stacked specs
        """
        raise NotImplementedError("reshape is not implemented for Stacked specs")

    view = reshape

    def _stack_values(self, samples: list, dim: int) -> torch.Tensor:
        if all(s.shape == samples[0].shape for s in samples[1:]):
            return torch.stack(samples, dim)
        if dim != 0:
            raise RuntimeError(
                "Stacked: samples of different shapes form a nested tensor, which needs the "
                f"stack dim to be 0, got {dim}"
            )
        return torch.nested.nested_tensor(samples)

    def _sample(self, method: str, shape: Any) -> torch.Tensor:
        prefix = as_size(shape)
        samples = [getattr(s, method)(prefix) for s in self._specs]
        return self._stack_values(samples, self._dim + len(prefix))

    def rand(self, shape: Any = None) -> torch.Tensor:
        """A sample of every stacked spec, stacked (nested if their shapes differ).

        Args:
            shape: extra leading dims (default none).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> x = spec.rand((5,))
            >>> x.shape, bool((x[:, 0] <= 1).all())
            (torch.Size([5, 2, 3]), True)
        """
        return self._sample("rand", shape)

    def _rand(self, full_shape: torch.Size) -> torch.Tensor:
        return self.rand(full_shape[: len(full_shape) - self.ndim])

    def zero(self, shape: Any = None) -> torch.Tensor:
        """Zeros of every stacked spec, stacked.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.zero()
            tensor([[0., 0., 0.],
                    [0., 0., 0.]])
        """
        return self._sample("zero", shape)

    def one(self, shape: Any = None) -> torch.Tensor:
        """Ones of every stacked spec, stacked.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.one((1,)).shape
            torch.Size([1, 2, 3])
        """
        return self._sample("one", shape)

    def invalid_reason(self, val: Any) -> str | None:
        """Why ``val`` is not in the stack (checked spec by spec), or None.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.invalid_reason(torch.tensor([[0.5, 0.5, 0.5], [1.5, 1.5, 1.5]])) is None
            True
            >>> spec.invalid_reason(torch.full((2, 3), 1.5))
            'stacked spec 0: values out of bounds: 3 element(s) outside [low, high], e.g. 1.5'
        """
        if not isinstance(val, torch.Tensor):
            return f"expected a torch.Tensor, got {type(val).__name__}"
        parts = self._unbind_value(val)
        if len(parts) != len(self._specs):
            return f"size {len(parts)} along the stack dim, expected {len(self._specs)}"
        for i, (spec, part) in enumerate(zip(self._specs, parts)):
            reason = spec.invalid_reason(part)
            if reason is not None:
                return f"stacked spec {i}: {reason}"
        return None

    def _invalid_reason(self, val: torch.Tensor) -> str | None:
        return self.invalid_reason(val)

    def type_check(self, value: Any, key: Any = None) -> None:
        """Type-checks each slice of ``value`` against its stacked spec.

        Raises:
            TypeError: naming the dtypes (and ``key`` when given).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.type_check(torch.zeros(2, 3))
            >>> spec.type_check(torch.zeros(2, 3, dtype=torch.int64), "obs")
            Traceback (most recent call last):
            ...
            TypeError: Bounded: expected a tensor of dtype torch.float32 for key 'obs', got ...
        """
        for spec, part in zip(self._specs, self._unbind_value(value)):
            spec.type_check(part, key)

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        parts = [s.project(p) for s, p in zip(self._specs, self._unbind_value(val))]
        return self._stack_values(parts, self._value_dim(val))

    def encode(self, val: Any, *, ignore_device: bool = False) -> Any:
        """Encodes each slice of ``val`` (along the stack dim) with its stacked spec.

        Args:
            val: a list with one value per stacked spec, or an array / tensor to split along
                the stack dim.
            ignore_device: if True, the results stay on the cpu.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.encode([[0.5, 0.5, 0.5], [1.5, 1.5, 1.5]])
            tensor([[0.5000, 0.5000, 0.5000],
                    [1.5000, 1.5000, 1.5000]])
        """
        if isinstance(val, (tuple, list)) and len(val) == len(self._specs):
            parts = list(val)
        else:
            parts = list(
                torch.as_tensor(np.asarray(val) if not isinstance(val, torch.Tensor) else val).unbind(self._dim)
            )
        samples = [s.encode(p, ignore_device=ignore_device) for s, p in zip(self._specs, parts)]
        return self._stack_values(samples, self._dim)

    def to_numpy(self, val: torch.Tensor, safe: bool | None = None) -> np.ndarray:
        """``val`` as a numpy array; ``safe=True`` checks it against every stacked spec first.

        Raises:
            SpecValueError: with ``safe=True``, when ``val`` is not in the stack.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.to_numpy(spec.one())
            array([[1., 1., 1.],
                   [1., 1., 1.]], dtype=float32)
        """
        if check_spec_encode() if safe is None else safe:
            self.assert_is_in(val)
        return val.detach().cpu().numpy()

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """The enumerations of the stacked specs, stacked (after the outcome dim).

        Examples:
            >>> from gpusim.specs import Categorical
            >>> a = Categorical(2, shape=(1,))
            >>> b = Categorical(2, shape=(1,), mask=torch.tensor([True, False]))
            >>> torch.stack([a, b], 0).enumerate().shape
            torch.Size([2, 2, 1])
        """
        return torch.stack([s.enumerate(use_mask) for s in self._specs], self._dim + 1)

    def cardinality(self) -> int:
        """Lazy stacks have no cardinality.

        Raises:
            NotImplementedError: always.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> spec = torch.stack([Bounded(0.0, 1.0, (3,)), Bounded(0.0, 2.0, (3,))], 0)
            >>> spec.cardinality()
            Traceback (most recent call last):
            ...
            NotImplementedError: cardinality is not implemented for Stacked specs
        """
        raise NotImplementedError("cardinality is not implemented for Stacked specs")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stacked) or len(self._specs) != len(other._specs):
            return False
        if self._dim != other._dim:
            return False
        return all(a == b for a, b in zip(self._specs, other._specs))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Stacked{self._specs[0]._repr_name()}(\n    shape={self.shape}, device={self.device}, "
            f"dtype={self.dtype}, domain={self._specs[0].domain})"
        )
