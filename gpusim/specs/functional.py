"""torch functions on specs: ``torch.stack``, ``torch.index_select``, ``torch.squeeze`` and
``torch.unsqueeze`` (reached through the specs' ``__torch_function__``)."""

from __future__ import annotations

from typing import Any

import torch

from gpusim.specs.base import HANDLED_FUNCTIONS, TensorSpec
from gpusim.specs.composite import Composite
from gpusim.specs.stacked import Stacked
from gpusim.specs.stacked_composite import StackedComposite

__all__ = ["stack_specs", "index_select_spec"]


def _stack_leaves(specs: list[TensorSpec], dim: int) -> TensorSpec:
    first = specs[0]
    all_equal = True
    for spec in specs[1:]:
        if not isinstance(spec, TensorSpec) or spec._eq_class is not first._eq_class:
            raise RuntimeError(
                "Stacking specs cannot occur: Found more than one type of specs in the list. "
                f"Got {type(first).__name__} and {type(spec).__name__}."
            )
        if spec.device != first.device:
            raise RuntimeError(f"Devices differ, got {first.device} and {spec.device}")
        if spec.dtype != first.dtype:
            raise RuntimeError(f"Dtypes differ, got {first.dtype} and {spec.dtype}")
        if spec.ndim != first.ndim:
            raise RuntimeError(f"Ndims differ, got {first.ndim} and {spec.ndim}")
        all_equal = all_equal and bool(spec == first)
    d = dim + first.ndim + 1 if dim < 0 else dim
    if all_equal:
        shape = list(first.shape)
        shape.insert(d, len(specs))
        return first.clone().unsqueeze(d).expand(*shape)
    return Stacked(*specs, dim=d)


def _stack_composites(specs: list[Composite], dim: int) -> Composite:
    first = specs[0]
    devices = {s.device for s in specs}
    devices.discard(None)
    device = devices.pop() if len(devices) == 1 else None
    all_equal = True
    for spec in specs[1:]:
        if not isinstance(spec, Composite):
            raise RuntimeError(
                "Stacking specs cannot occur: Found more than one type of spec in the list "
                f"(a Composite and a {type(spec).__name__})."
            )
        if spec.shape != first.shape:
            raise RuntimeError(f"Shapes differ, got {tuple(spec.shape)} and {tuple(first.shape)}")
        if device is not None and spec.device != device:
            spec = spec.to(device)
        all_equal = all_equal and bool(spec == (first.to(device) if device is not None else first))
    d = dim + first.ndim + 1 if dim < 0 else dim
    if all_equal:
        shape = list(first.shape)
        shape.insert(d, len(specs))
        return first.clone().unsqueeze(d).expand(*shape)
    return StackedComposite(*specs, dim=d)


def stack_specs(specs: Any, dim: int = 0, out: Any = None) -> Any:
    """``torch.stack`` for specs: a dense spec when all are equal, else a lazy stack.

    Args:
        specs: the specs (all leaves of one class, or all Composites).
        dim: the new dim.
        out: not supported (specs are not modified in place).

    Raises:
        RuntimeError: when the specs differ in class, device, dtype, number of dims (leaves) or
            shape (Composites).

    Examples:
        >>> from gpusim.specs import Bounded
        >>> stack_specs([Bounded(0, 1, shape=(3,)), Bounded(0, 1, shape=(3,))], 0).shape
        torch.Size([2, 3])
        >>> type(stack_specs([Bounded(0, 1, shape=(3,)), Bounded(0, 2, shape=(3,))], 0)).__name__
        'Stacked'
    """
    if out is not None:
        raise NotImplementedError("torch.stack(specs, dim, out=...) is not supported for specs")
    specs = list(specs)
    if not specs:
        raise ValueError("Cannot stack an empty list of specs.")
    if isinstance(specs[0], Composite):
        return _stack_composites(specs, dim)
    if isinstance(specs[0], TensorSpec):
        return _stack_leaves(specs, dim)
    raise TypeError(f"stack_specs: expected specs, got {type(specs[0]).__name__}")


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
            f"index_select is not supported for {type(input).__name__} specs (lazy stacks); index the stack dim instead"
        )
    ndim = len(input.shape)
    d = dim + ndim if dim < 0 else dim
    if not 0 <= d < ndim:
        raise IndexError(f"index_select: dim {dim} is out of range for shape {tuple(input.shape)}")
    index = torch.as_tensor(index)
    size = input.shape[d]
    if index.numel() and bool(((index < 0) | (index >= size)).any()):
        raise IndexError(f"index_select: index {index.tolist()} is out of bounds for dim {d} with size {size}")
    if isinstance(input, TensorSpec) and d >= len(input.batch_shape):
        raise ValueError(
            f"Cannot index_select along the last dimension of {type(input).__name__} spec, as it represents the domain."
        )
    return input[(slice(None),) * d + (index.reshape(-1).long(),)]


def _squeeze(spec: Any, *args: Any, **kwargs: Any) -> Any:
    return spec.squeeze(*args, **kwargs)


def _unsqueeze(spec: Any, *args: Any, **kwargs: Any) -> Any:
    return spec.unsqueeze(*args, **kwargs)


HANDLED_FUNCTIONS[torch.stack] = stack_specs
HANDLED_FUNCTIONS[torch.index_select] = index_select_spec
HANDLED_FUNCTIONS[torch.squeeze] = _squeeze
HANDLED_FUNCTIONS[torch.unsqueeze] = _unsqueeze
