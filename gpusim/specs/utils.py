"""Helpers over lazy stacks of specs: find and fill exclusive keys (TorchRL's ``torchrl.data.utils``)."""

from __future__ import annotations

from typing import Any

import torch

from gpusim.specs.composite import Composite
from gpusim.specs.stacked import Stacked
from gpusim.specs.stacked_composite import StackedComposite

__all__ = ["consolidate_spec", "check_no_exclusive_keys", "contains_lazy_spec", "has_dynamic_dims"]


def consolidate_spec(spec: Any, recurse_through_entries: bool = True, recurse_through_stack: bool = True) -> Any:
    """A copy of ``spec`` where every stacked Composite has the keys of all the others.

    A key only some stacked Composites hold (an *exclusive* key) is added to the others as an
    empty placeholder (an empty Composite, or a leaf with 0 extent), so that the stack has no
    exclusive keys left.

    Args:
        spec: the spec (anything else than a Composite is returned as a copy).
        recurse_through_entries: also consolidate nested Composites.
        recurse_through_stack: also consolidate the stacked Composites themselves.

    Examples:
        >>> from gpusim.specs import Unbounded
        >>> spec = torch.stack([Composite(a=Unbounded()), Composite(b=Unbounded())], 0)
        >>> check_no_exclusive_keys(spec), check_no_exclusive_keys(consolidate_spec(spec))
        (False, True)
    """
    spec = spec.clone()
    if not isinstance(spec, Composite):
        return spec
    if isinstance(spec, StackedComposite):
        shared = set(spec.keys())
        exclusive: list[set] = []
        examples: dict[str, list] = {}
        for i, sub in enumerate(spec._specs):
            if recurse_through_stack:
                sub = consolidate_spec(sub, recurse_through_entries, recurse_through_stack)
                spec._specs[i] = sub
            own = {k for k in sub.keys() if k not in shared}
            exclusive.append(own)
            for key in own:
                examples.setdefault(key, []).append(sub[key])
        for sub, own in zip(spec._specs, exclusive):
            for key in set(examples) - own:
                sub.set(key, _placeholder(examples[key], sub.shape))
    if recurse_through_entries:
        for key, value in spec.items():
            if isinstance(value, Composite):
                spec.set(key, consolidate_spec(value, recurse_through_entries, recurse_through_stack))
    return spec


def _placeholder(specs: list[Any], shape: torch.Size) -> Any:
    first = specs[0]
    for spec in specs[1:]:
        if type(spec) is not type(first):
            raise ValueError(
                "consolidate_spec: the same key holds specs of different classes "
                f"({type(first).__name__} and {type(spec).__name__}) in the stacked specs"
            )
    if isinstance(first, Composite):
        return first.empty()
    if isinstance(first, Stacked):
        inner = torch.Size(s for i, s in enumerate(shape) if i != first.stack_dim)
        return Stacked(*[_placeholder(first._specs, inner) for _ in first._specs], dim=first.stack_dim)
    dims = [0 if any(s.shape[i] != d for s in specs) else d for i, d in enumerate(first.shape)]
    if 0 not in dims:
        dims = [d if i < len(shape) else 0 for i, d in enumerate(dims)]
    point = first[(0,) * len(first.batch_shape)]
    return point.expand(*dims[: len(dims) - point.ndim], *point.shape)


def check_no_exclusive_keys(spec: Any, recurse: bool = True) -> bool:
    """Whether no stacked Composite in ``spec`` holds a key the others lack.

    Args:
        spec: the spec.
        recurse: also check nested Composites and the stacked Composites themselves.

    Examples:
        >>> from gpusim.specs import Unbounded
        >>> check_no_exclusive_keys(torch.stack([Composite(a=Unbounded()), Composite()], 0))
        False
    """
    if isinstance(spec, StackedComposite):
        keys = set(spec.keys())
        for sub in spec._specs:
            if recurse and not check_no_exclusive_keys(sub):
                return False
            if set(sub.keys()) != keys:
                return False
    elif isinstance(spec, Composite) and recurse:
        for value in spec.values():
            if not check_no_exclusive_keys(value):
                return False
    return True


def contains_lazy_spec(spec: Any) -> bool:
    """Whether ``spec`` is, or holds, a lazy stack (:class:`Stacked` / :class:`StackedComposite`).

    Examples:
        >>> from gpusim.specs import Unbounded
        >>> contains_lazy_spec(Composite(a=Unbounded())), contains_lazy_spec(
        ...     torch.stack([Unbounded(shape=(1,)), Unbounded(shape=(2,))], 0))
        (False, True)
    """
    if isinstance(spec, (Stacked, StackedComposite)):
        return True
    if isinstance(spec, Composite):
        return any(contains_lazy_spec(v) for v in spec.values() if v is not None)
    return False


def has_dynamic_dims(spec: Any) -> bool:
    """Whether a leaf of ``spec`` has a dynamic (``-1``) dim: its extent varies between samples.

    The parts of a lazy stack (:class:`Stacked` / :class:`StackedComposite`) are looked at one
    by one: a heterogeneous stack (parts of different but fixed shapes) is not dynamic.

    Args:
        spec: a spec (``None``: no spec, not dynamic).

    Examples:
        >>> from gpusim.specs import Unbounded
        >>> has_dynamic_dims(Composite(obs=Unbounded(shape=(3, -1, 2))))
        True
        >>> has_dynamic_dims(Composite(obs=Unbounded(shape=(3,))))
        False
        >>> has_dynamic_dims(torch.stack([Unbounded(shape=(1,)), Unbounded(shape=(2,))], 0))
        False
    """
    if spec is None:
        return False
    if isinstance(spec, (Stacked, StackedComposite)):
        return any(has_dynamic_dims(part) for part in spec._specs)
    if isinstance(spec, Composite):
        return any(has_dynamic_dims(value) for value in spec.values())
    return any(d == -1 for d in spec.shape)
