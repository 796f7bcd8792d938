"""Spec helpers shared by the stateless transforms.

Transforms that change tensors (a dtype cast, a reshape, an affine map, an image resize) must
change the specs of the keys they touch the same way. :func:`map_leaf` does that for a leaf spec
given the tensor function: ``Bounded`` specs get the function applied to their bounds (every
transform here is monotone on values, or the caller asks for ``bounds="sorted"``), ``Unbounded``
specs keep only the new shape and dtype, discrete specs keep their values and take the new
shape. Keys are looked up once, when the transform is attached, and a missing key raises a
``KeyError`` that names it.

Examples:
    >>> import torch
    >>> from gpusim.specs import Bounded
    >>> from gpusim.transforms._spec_utils import map_leaf
    >>> spec = Bounded(0, 255, shape=(4, 3), dtype=torch.uint8)
    >>> new = map_leaf(spec, lambda x: x.float() / 255, key="pixels", owner="Demo")
    >>> new.dtype, new.low.unique().item(), new.high.unique().item()
    (torch.float32, 0.0, 1.0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch

from gpusim.envs._keys import NestedKey
from gpusim.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    TensorSpec,
    Unbounded,
)

__all__ = [
    "OUTPUT_SPECS",
    "INPUT_SPECS",
    "fmt_key",
    "locate",
    "require_keys",
    "find_keys",
    "drop_leaf",
    "map_leaf",
    "check_finite_number",
]

#: the sub-composites of an env's ``output_spec`` / ``input_spec``
OUTPUT_SPECS = ("full_observation_spec", "full_reward_spec", "full_done_spec")
INPUT_SPECS = ("full_action_spec", "full_state_spec")


def fmt_key(key: NestedKey) -> str:
    """``'obs'`` or ``('agents', 'obs')``: the key as users write it."""
    if isinstance(key, tuple) and len(key) == 1:
        key = key[0]
    return repr(key)


def locate(container: Composite, names: Sequence[str], key: NestedKey) -> str | None:
    """The name of the sub-composite of ``container`` (among ``names``) holding leaf ``key``."""
    for name in names:
        if name not in container.keys():
            continue
        sub = container[name]
        spec = sub.get(key, None)
        if spec is not None and not isinstance(spec, Composite):
            return name
    return None


def require_keys(
    container: Composite,
    names: Sequence[str],
    keys: Iterable[NestedKey],
    owner: str,
    what: str = "in_keys",
) -> dict:
    """Maps every key to the sub-composite that holds it; raises ``KeyError`` naming a missing one."""
    found = {}
    for key in keys:
        name = locate(container, names, key)
        if name is None:
            available = sorted(
                fmt_key(k) for n in names if n in container.keys() for k in container[n].keys(True, True)
            )
            raise KeyError(
                f"{owner}: {what} entry {fmt_key(key)} is not in the env's specs "
                f"({', '.join(names)}); available keys: {', '.join(available)}"
            )
        found[key] = name
    return found


def find_keys(container: Composite, names: Sequence[str], keys: Iterable[NestedKey]) -> dict:
    """Maps every key found to the sub-composite that holds it (absent keys are left out)."""
    found = {}
    for key in keys:
        name = locate(container, names, key)
        if name is not None:
            found[key] = name
    return found


def drop_leaf(sub: Composite, key: NestedKey) -> None:
    """Deletes leaf ``key`` from ``sub`` and any nested composite that it leaves empty."""
    del sub[key]
    parts = (key,) if isinstance(key, str) else tuple(key)
    for depth in range(len(parts) - 1, 0, -1):
        holder = sub[parts[:depth]]
        if isinstance(holder, Composite) and len(holder.keys()) == 0:
            del sub[parts[:depth] if depth > 1 else parts[0]]
        else:
            break


def check_finite_number(value, name: str, owner: str) -> None:
    """Raises ``ValueError`` naming ``value`` when it is NaN (or a tensor holding NaN)."""
    t = torch.as_tensor(value)
    if t.is_floating_point() and bool(torch.isnan(t).any()):
        raise ValueError(f"{owner}: {name} must not be NaN, got {value!r}")


def _probe(spec: TensorSpec, fn: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """``fn`` applied to a zero tensor of the spec's shape on the meta device (shape/dtype only)."""
    try:
        return fn(torch.zeros(spec.shape, dtype=spec.dtype, device="meta"))
    except (NotImplementedError, RuntimeError):
        return fn(torch.zeros(spec.shape, dtype=spec.dtype, device=spec.device))


def map_leaf(
    spec: TensorSpec,
    fn: Callable[[torch.Tensor], torch.Tensor],
    *,
    key: NestedKey,
    owner: str,
    bounds: str = "map",
    values_change: bool = True,
) -> TensorSpec:
    """The spec of ``fn(x)`` for ``x`` inside ``spec``.

    Args:
        spec: the leaf spec of the input.
        fn: the tensor function (shape-preserving or not, dtype-changing or not).
        key: the key (for error messages).
        owner: the transform name (for error messages).
        bounds: how ``Bounded`` bounds are mapped: ``"map"`` (``fn`` is monotone increasing: the
            new bounds are ``fn(low)``, ``fn(high)``), ``"sorted"`` (``fn`` is elementwise
            monotone in either direction: elementwise min/max of the two) or ``"unbounded"``
            (the output has no bounds: an ``Unbounded`` spec).
        values_change: ``False`` when ``fn`` only moves values around (reshape, permute, cast
            between integer types): discrete specs keep their value set with the new shape.

    Raises:
        TypeError: when the spec kind cannot follow ``fn`` (naming the key and the spec).
    """
    try:
        probe = _probe(spec, fn)
    except (IndexError, RuntimeError, ValueError) as err:
        raise ValueError(
            f"{owner} cannot be applied to key {fmt_key(key)} with spec shape {list(spec.shape)} and "
            f"dtype {spec.dtype}: {err}"
        ) from err
    shape, dtype = probe.shape, probe.dtype
    device = spec.device
    if isinstance(spec, Bounded) and bounds != "unbounded":
        low, high = fn(spec.low), fn(spec.high)
        if bounds == "sorted":
            low, high = torch.minimum(low, high), torch.maximum(low, high)
        return Bounded(low.to(dtype), high.to(dtype), shape=shape, dtype=dtype, device=device)
    if isinstance(spec, (Unbounded, Bounded)):
        if not dtype.is_floating_point and bounds == "unbounded" and dtype != torch.bool:
            info = torch.iinfo(dtype)
            return Bounded(info.min, info.max, shape=shape, dtype=dtype, device=device)
        return Unbounded(shape=shape, dtype=dtype, device=device)
    if not values_change:
        if isinstance(spec, Categorical) and spec.mask is None:
            return Categorical(spec.n, shape=shape, dtype=dtype, device=device)
        if isinstance(spec, Binary) and len(shape) > 0:
            return Binary(shape[-1], shape=shape, dtype=dtype, device=device)
        if type(spec) is MultiCategorical and shape == spec.shape and dtype == spec.dtype:
            return spec.clone()
        if shape == spec.shape:
            return spec.to(dtype) if dtype != spec.dtype else spec.clone()
    raise TypeError(
        f"{owner} cannot transform the spec of key {fmt_key(key)}: {type(spec).__name__} with shape "
        f"{list(spec.shape)} and dtype {spec.dtype} (it supports Bounded and Unbounded specs"
        f"{'' if values_change else ', Categorical and Binary'})"
    )
