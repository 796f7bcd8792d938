"""Shape operations shared by every leaf spec: expand, indexing, unbind, (un)squeeze, reshape.

They are written once over the *shape-aligned* tensor parameters of the leaf classes (bounds,
masks, category counts laid out as ``(*batch_shape, *event)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from gpusim.specs._shapes import (
    DYNAMIC,
    expand_index,
    index_plan,
    safe_size,
    shape_args,
    squeezed_shape,
)

__all__ = ["ShapeOpsMixin"]


class ShapeOpsMixin:
    """Shape operations of :class:`~gpusim.specs.TensorSpec` (mixed into it).

    Examples:
        >>> from gpusim.specs import Bounded
        >>> spec = Bounded(0.0, 1.0, shape=(4, 3))
        >>> spec[1:3].shape, spec.unsqueeze(0).shape, len(spec.unbind(0))
        (torch.Size([2, 3]), torch.Size([1, 4, 3]), 4)
    """

    _event_ndim: int
    shape: torch.Size

    def _check_new_batch(self, op: str, new_shape: torch.Size) -> None:
        event = self.shape[self.ndim - self._event_ndim :]
        if self._event_ndim and new_shape[len(new_shape) - self._event_ndim :] != event:
            raise ValueError(
                f"{op}: the last {self._event_ndim} dim(s) of {type(self).__name__} must stay "
                f"{tuple(event)}, got new shape {tuple(new_shape)}"
            )

    def _expanded_shape(self, shape: tuple) -> torch.Size:
        """Validates an ``expand`` target (TorchRL's rule) and returns it."""
        new = list(shape_args(shape))
        ok = len(new) >= self.ndim
        if ok:
            lead = len(new) - self.ndim
            for i, cur in enumerate(self.shape):
                if new[lead + i] != cur and cur != 1:
                    ok = False
        if not ok:
            raise ValueError(
                f"The last {self.ndim} of the expanded shape {tuple(new)} must match the shape "
                f"{tuple(self.shape)} of the {type(self).__name__} spec in expand() (the new "
                "shape must end with the spec shape; only size-1 dims can grow)"
            )
        return torch.Size(new)

    def expand(self, *shape: Any) -> Any:
        """Returns the spec with extra leading dims; the new shape must end with the current one.

        Size-1 dims can be expanded (``-1`` makes them dynamic).

        Examples:
            >>> from gpusim.specs import Bounded
            >>> Bounded(0.0, 1.0, shape=(3,)).expand(4, 3).shape
            torch.Size([4, 3])
        """
        new_shape = self._expanded_shape(shape)
        self._check_new_batch("expand", new_shape)
        new_batch = safe_size(new_shape[: len(new_shape) - self._event_ndim])

        def fn(t: torch.Tensor, ev: int) -> torch.Tensor:
            return t.expand(*new_batch, *t.shape[t.ndim - ev :])

        return self._replace(params=self._map_params(fn), shape=new_shape)

    def __getitem__(self, idx: Any) -> Any:
        """Indexes the spec over its leading (batch) dims.

        Examples:
            >>> from gpusim.specs import OneHot
            >>> OneHot(5, shape=(4, 3, 5))[1:3].shape
            torch.Size([2, 3, 5])
        """
        bshape = self.batch_shape
        nidx = expand_index(idx, len(bshape))
        new_batch, pidx, flips = index_plan(bshape, nidx)
        event = self.shape[len(bshape) :]

        def fn(t: torch.Tensor, ev: int) -> torch.Tensor:
            dev_idx = tuple(i.to(t.device) if isinstance(i, torch.Tensor) else i for i in pidx)
            return (t.flip(flips) if flips else t)[dev_idx]

        return self._replace(params=self._map_params(fn), shape=torch.Size((*new_batch, *event)))

    def unbind(self, dim: int = 0) -> tuple[Any, ...]:
        """Splits the spec along a batch dim into a tuple of specs.

        Raises:
            ValueError: for an event dim (e.g. the last dim of :class:`OneHot`), a dynamic dim or
                a dim out of range.

        Examples:
            >>> from gpusim.specs import Categorical
            >>> [s.shape for s in Categorical(3, shape=(2, 4)).unbind(0)]
            [torch.Size([4]), torch.Size([4])]
        """
        d = dim + self.ndim if dim < 0 else dim
        if not 0 <= d < self.ndim:
            raise ValueError(f"unbind: dim {dim} is out of range for shape {tuple(self.shape)}")
        if d >= len(self.batch_shape):
            raise ValueError(
                f"unbind: dim {dim} is an event dim of {type(self).__name__} (the final "
                f"dimension of {tuple(self.shape)} must remain unchanged)"
            )
        if self.shape[d] == DYNAMIC:
            raise ValueError(f"unbind: dim {dim} of {tuple(self.shape)} is dynamic (-1)")
        lead = (slice(None),) * d
        return tuple(self[(*lead, i)] for i in range(self.shape[d]))

    def squeeze(self, dim: int | None = None) -> Any:
        """Removes size-1 batch dims (all of them, or ``dim``); returns self if none.

        As in TorchRL, ``squeeze()`` leaves a 1-D spec unchanged.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(1, 3, 1)).squeeze().shape
            torch.Size([3])
        """
        bnd = len(self.batch_shape)
        if dim is not None:
            d = dim + self.ndim if dim < 0 else dim
            if not 0 <= d < self.ndim:
                raise ValueError(f"squeeze: dim {dim} is out of range for shape {tuple(self.shape)}")
            if d >= bnd:
                raise ValueError(
                    f"squeeze: dim {dim} is not a batch dim of {type(self).__name__} with shape "
                    f"{tuple(self.shape)} (the final dimension must remain unchanged)"
                )
            dims = [d] if self.shape[d] == 1 else []
        else:
            if squeezed_shape(self.shape, None) is None:
                return self
            dims = [i for i in range(bnd) if self.shape[i] == 1]
        if not dims:
            return self
        new_shape = torch.Size(s for i, s in enumerate(self.shape) if i not in dims)

        def fn(t: torch.Tensor, ev: int) -> torch.Tensor:
            return t.squeeze(tuple(dims))

        return self._replace(params=self._map_params(fn), shape=new_shape)

    def unsqueeze(self, dim: int) -> Any:
        """Inserts a size-1 dim at ``dim`` (negative dims count from the end of the full shape).

        Raises:
            ValueError: when ``dim`` falls among the event dims (e.g. ``-1`` for
                :class:`OneHot`).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(3,)).unsqueeze(-1).shape
            torch.Size([3, 1])
        """
        d = dim + self.ndim + 1 if dim < 0 else dim
        if not 0 <= d <= len(self.batch_shape):
            raise ValueError(
                f"unsqueeze: dim {dim} is out of the batch dims of {type(self).__name__} with "
                f"shape {tuple(self.shape)} (the final dimension must remain unchanged)"
            )
        new_shape = torch.Size((*self.shape[:d], 1, *self.shape[d:]))

        def fn(t: torch.Tensor, ev: int) -> torch.Tensor:
            return t.unsqueeze(d)

        return self._replace(params=self._map_params(fn), shape=new_shape)

    def reshape(self, *shape: Any) -> Any:
        """Reshapes the batch dims (event dims must be kept); ``-1`` is inferred.

        Examples:
            >>> from gpusim.specs import Bounded
            >>> Bounded(0.0, 1.0, shape=(4, 3)).reshape(2, 6).shape
            torch.Size([2, 6])
        """
        target = list(shape_args(shape))
        if DYNAMIC in self.shape:
            raise ValueError(f"reshape: cannot reshape a spec with dynamic dims {tuple(self.shape)}")
        if target.count(-1) > 1:
            raise ValueError(f"reshape: at most one -1 allowed, got {tuple(target)}")
        if -1 in target:
            known = int(np.prod([d for d in target if d != -1]))
            target[target.index(-1)] = self.numel() // known if known else 0
        new_shape = torch.Size(target)
        if new_shape.numel() != self.numel():
            raise ValueError(
                f"reshape: cannot reshape {type(self).__name__} of shape {tuple(self.shape)} into {tuple(new_shape)}"
            )
        self._check_new_batch("reshape", new_shape)
        new_batch = new_shape[: len(new_shape) - self._event_ndim]

        def fn(t: torch.Tensor, ev: int) -> torch.Tensor:
            return t.reshape(*new_batch, *t.shape[t.ndim - ev :])

        return self._replace(params=self._map_params(fn), shape=new_shape)

    view = reshape

    def flatten(self, start_dim: int, end_dim: int) -> Any:
        """Flattens dims ``start_dim..end_dim`` into one (batch dims only).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(2, 3, 4)).flatten(0, 1).shape
            torch.Size([6, 4])
        """
        shape = torch.empty(self._safe_shape, device="meta").flatten(start_dim, end_dim).shape
        return self.reshape(shape)

    def unflatten(self, dim: int, sizes: Any) -> Any:
        """Splits dim ``dim`` into ``sizes`` (batch dims only).

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> Unbounded(shape=(6, 4)).unflatten(0, (2, 3)).shape
            torch.Size([2, 3, 4])
        """
        shape = torch.empty(self._safe_shape, device="meta").unflatten(dim, sizes).shape
        return self.reshape(shape)

    def make_neg_dim(self, dim: int) -> None:
        """Turns dim ``dim`` into a dynamic (``-1``) dim, in place.

        Raises:
            ValueError: when ``dim`` is out of range or the parameters differ along it.

        Examples:
            >>> from gpusim.specs import Unbounded
            >>> spec = Unbounded(shape=(3, 2))
            >>> spec.make_neg_dim(0)
            >>> spec.shape
            torch.Size([-1, 2])
        """
        d = dim + self.ndim if dim < 0 else dim
        if not 0 <= d < self.ndim:
            raise ValueError(f"make_neg_dim: dim={dim} is out of bound for ndim={self.ndim}")
        params = {}
        if d < len(self.batch_shape):
            for name, t in self._params().items():
                first = t.narrow(d, 0, 1)
                if not torch.equal(t, first.expand_as(t)):
                    raise ValueError(
                        f"make_neg_dim: {type(self).__name__}.{name} differs along dim {dim}; it cannot become dynamic"
                    )
                params[name] = first
        self._shape = torch.Size(DYNAMIC if i == d else s for i, s in enumerate(self.shape))
        if params:
            self._set_params(params)
            self._post_replace()
