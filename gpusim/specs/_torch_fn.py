"""``torch.index_select``, ``torch.squeeze`` and ``torch.unsqueeze`` on specs."""

from __future__ import annotations

from typing import Any

import torch

from gpusim.specs.base import HANDLED_FUNCTIONS, TensorSpec
from gpusim.specs.stacked import Stacked, StackedComposite

__all__ = ["index_select_spec"]


def index_select_spec(input: Any, dim: int, index: torch.Tensor) -> Any:  # noqa: A002
    """``torch.index_select`` for specs: keeps the entries ``index`` of dim ``dim``.

    Args:
        input: a leaf spec or a Composite.
        dim: the dim to select along (a batch dim; negative dims count from the end).
        index: a 1-D integer tensor.

    Raises:
        IndexError: for an index out of range.
        ValueError: along an event dim (e.g. the last dim of :class:`OneHot`), which is the
            domain of the values.
        NotImplementedError: for lazy stacks.

    Examples:
        >>> from gpusim.specs import Bounded
        >>> torch.index_select(Bounded(0, 1, shape=(5, 3)), 0, torch.tensor([0, 4])).shape
        torch.Size([2, 3])
    """
    if isinstance(input, (Stacked, StackedComposite)):
        raise NotImplementedError(
            f"index_select is not supported for {type(input).__name__} specs (lazy stacks); "
            "index the stack dim instead"
        )
    ndim = len(input.shape)
    d = dim + ndim if dim < 0 else dim
    if not 0 <= d < ndim:
        raise IndexError(f"index_select: dim {dim} is out of range for shape {tuple(input.shape)}")
    index = torch.as_tensor(index)
    size = input.shape[d]
    if index.numel() and bool(((index < 0) | (index >= size)).any()):
        raise IndexError(
            f"index_select: index {index.tolist()} is out of bounds for dim {d} with size {size}"
        )
    if isinstance(input, TensorSpec) and d >= len(input.batch_shape):
        raise ValueError(
            f"Cannot index_select along the last dimension of {type(input).__name__} spec, as it "
            "represents the domain."
        )
    return input[(slice(None),) * d + (index.reshape(-1).long(),)]


def _squeeze(spec: Any, *args: Any, **kwargs: Any) -> Any:
    return spec.squeeze(*args, **kwargs)


def _unsqueeze(spec: Any, *args: Any, **kwargs: Any) -> Any:
    return spec.unsqueeze(*args, **kwargs)


HANDLED_FUNCTIONS[torch.index_select] = index_select_spec
HANDLED_FUNCTIONS[torch.squeeze] = _squeeze
HANDLED_FUNCTIONS[torch.unsqueeze] = _unsqueeze
