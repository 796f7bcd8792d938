"""gpusim specs as TorchRL specs (``torchrl.data``), for :class:`~gpusim.interop.torchrl_env.TorchRLEnv`.

Every gpusim spec class has a TorchRL class of the same name and meaning (DESIGN.md section 2):
the conversion builds that class with the same shape, dtype, device and parameters (bounds,
``n``, ``nvec``, masks). It runs once, when an env is adapted; data never goes through it.

This module imports torchrl: use it through :func:`gpusim.to_torchrl`, which says what to
install when torchrl is missing.

Examples:
    >>> import torch
    >>> from gpusim.specs import Bounded, Categorical, Composite
    >>> spec = Composite(obs=Bounded(-1.0, 1.0, shape=(4, 3)), action=Categorical(2, shape=(4,)), shape=(4,))
    >>> trl = to_torchrl_spec(spec)
    >>> type(trl).__module__.split(".")[0], type(trl["action"]).__name__, trl["obs"].shape
    ('torchrl', 'Categorical', torch.Size([4, 3]))
"""

from __future__ import annotations

from typing import Any

import torch
from torchrl import data as trl

from gpusim.envs import _keys
from gpusim.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    TensorSpec,
    Unbounded,
)

__all__ = ["to_torchrl_spec"]


def _mask(spec: TensorSpec) -> torch.Tensor | None:
    return getattr(spec, "mask", None)


def _leaf(spec: TensorSpec, key: tuple) -> Any:
    shape, device, dtype = spec.shape, spec.device, spec.dtype
    # most specific classes first: the gpusim classes do not derive from each other except
    # UnboundedDiscrete (an Unbounded with an int64 dtype, which TorchRL's Unbounded also picks)
    if isinstance(spec, Bounded):
        return trl.Bounded(low=spec.low, high=spec.high, shape=shape, device=device, dtype=dtype, domain=spec.domain)
    if isinstance(spec, Unbounded):
        return trl.Unbounded(shape=shape, device=device, dtype=dtype)
    if isinstance(spec, Categorical):
        return trl.Categorical(spec.n, shape=shape, device=device, dtype=dtype, mask=_mask(spec))
    if isinstance(spec, OneHot):
        return trl.OneHot(spec.n, shape=shape, device=device, dtype=dtype, mask=_mask(spec))
    if isinstance(spec, MultiCategorical):
        nvec = torch.as_tensor(spec.nvec).clone()  # spec-shaped, as TorchRL keeps it
        return trl.MultiCategorical(nvec, shape=shape, device=device, dtype=dtype, mask=_mask(spec))
    if isinstance(spec, MultiOneHot):
        return trl.MultiOneHot(list(spec.nvec), shape=shape, device=device, dtype=dtype, mask=_mask(spec))
    if isinstance(spec, Binary):
        return trl.Binary(spec.n, shape=shape, device=device, dtype=dtype)
    if isinstance(spec, NonTensor):
        return trl.NonTensor(shape=shape, device=device, dtype=dtype, example_data=spec.example_data)
    raise TypeError(
        f"the spec at key {_keys.fmt(key) if key else '(the root)'} is a {type(spec).__name__}, which has no TorchRL equivalent; "
        "supported: Composite, Bounded, Unbounded, Categorical, OneHot, MultiCategorical, MultiOneHot, "
        "Binary, NonTensor"
    )


def to_torchrl_spec(spec: TensorSpec | Composite, key: tuple = ()) -> Any:
    """The TorchRL spec (``torchrl.data``) equivalent to a gpusim spec, nested ``Composite`` s included.

    Args:
        spec: a gpusim spec (leaf or :class:`~gpusim.specs.Composite`).
        key: where ``spec`` sits (a tuple of names), named in errors; the root by default.

    Returns:
        A new ``torchrl.data`` spec with the same class name, shape, dtype, device and parameters.

    Raises:
        TypeError: a spec class with no TorchRL equivalent, naming its key.

    Examples:
        >>> from gpusim.specs import OneHot
        >>> to_torchrl_spec(OneHot(3, shape=(2, 3))).rand().sum(-1).tolist()
        [1, 1]
    """
    if isinstance(spec, Composite):
        children = {name: to_torchrl_spec(child, (*key, name)) for name, child in spec.items()}
        return trl.Composite(children, shape=spec.shape, device=spec.device)
    return _leaf(spec, key)
