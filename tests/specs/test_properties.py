"""Hypothesis property tests: ``rand`` lands inside the spec, ``project`` maps anything inside."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gpusim.specs import Binary, Bounded, Categorical, MultiCategorical, MultiOneHot, OneHot

SETTINGS = settings(max_examples=40, deadline=None)

shapes = st.sampled_from([(), (1,), (7,), (3, 4)])
finite = st.floats(-1e6, 1e6, allow_nan=False, width=32)
anything = st.floats(allow_nan=True, allow_infinity=True, width=32)


@st.composite
def bounded_specs(draw) -> Bounded:
    shape = draw(shapes)
    a = draw(arrays(np.float32, shape, elements=finite))
    b = draw(arrays(np.float32, shape, elements=finite))
    low, high = np.asarray(np.minimum(a, b)), np.asarray(np.maximum(a, b))
    if draw(st.booleans()):
        return Bounded(torch.from_numpy(low), torch.from_numpy(high))
    ilow = np.asarray(np.floor(low / 1e3), dtype=np.int64)
    ihigh = np.asarray(np.ceil(high / 1e3), dtype=np.int64)
    dtype = draw(st.sampled_from([torch.int64, torch.int32]))
    return Bounded(torch.from_numpy(ilow), torch.from_numpy(ihigh), shape=shape, dtype=dtype)


@SETTINGS
@given(spec=bounded_specs(), prefix=st.sampled_from([(), (2,)]))
def test_bounded_rand_is_in(spec: Bounded, prefix: tuple) -> None:
    x = spec.rand(prefix)
    assert x.shape == (*prefix, *spec.shape)
    assert spec.is_in(x), spec.invalid_reason(x)


@SETTINGS
@given(spec=bounded_specs(), data=st.data())
def test_bounded_project_lands_inside(spec: Bounded, data) -> None:
    vals = data.draw(arrays(np.float32, tuple(spec.shape), elements=anything))
    out = spec.project(torch.from_numpy(vals))
    assert spec.is_in(out), spec.invalid_reason(out)


@SETTINGS
@given(
    low=finite,
    width=st.floats(0, 1e6, width=32),
    n_inf=st.sampled_from(["low", "high", "both"]),
)
def test_bounded_infinite_rand_is_in(low: float, width: float, n_inf: str) -> None:
    lo = -float("inf") if n_inf in ("low", "both") else low
    hi = float("inf") if n_inf in ("high", "both") else low + width
    spec = Bounded(lo, hi, shape=(5,))
    assert spec.is_in(spec.rand((3,)))


@st.composite
def masks(draw, batch: tuple, n: int) -> torch.Tensor:
    """A random bool mask of shape ``(*batch, n)`` with at least one True per row."""
    m = draw(arrays(np.bool_, (*batch, n)))
    keep = draw(arrays(np.int64, batch, elements=st.integers(0, n - 1)))
    np.put_along_axis(m, np.expand_dims(keep, -1), True, axis=-1)
    return torch.from_numpy(m)


@st.composite
def discrete_specs(draw):
    batch = draw(shapes)
    kind = draw(st.sampled_from(["cat", "onehot", "multicat", "multionehot", "binary"]))
    use_mask = draw(st.booleans())
    if kind == "cat":
        n = draw(st.integers(1, 6))
        mask = draw(masks(batch, n)) if use_mask else None
        return Categorical(n, shape=batch, mask=mask)
    if kind == "onehot":
        n = draw(st.integers(1, 6))
        mask = draw(masks(batch, n)) if use_mask else None
        dtype = draw(st.sampled_from([torch.bool, torch.int64, torch.float32]))
        return OneHot(n, shape=(*batch, n), mask=mask, dtype=dtype)
    nvec = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    if kind == "multicat":
        mask = None
        if use_mask:
            mask = torch.cat([draw(masks(batch, n)) for n in nvec], -1)
        return MultiCategorical(nvec, shape=(*batch, len(nvec)), mask=mask)
    if kind == "multionehot":
        mask = None
        if use_mask:
            mask = torch.cat([draw(masks(batch, n)) for n in nvec], -1)
        return MultiOneHot(nvec, shape=(*batch, sum(nvec)), mask=mask)
    n = draw(st.integers(1, 5))
    return Binary(n, shape=(*batch, n))


@SETTINGS
@given(spec=discrete_specs(), prefix=st.sampled_from([(), (3,)]))
def test_discrete_rand_is_in(spec, prefix: tuple) -> None:
    x = spec.rand(prefix)
    shape = spec.shape
    if isinstance(spec, MultiCategorical) and shape == (1,):
        shape = shape[:-1]  # TorchRL's remove_singleton: a (1,) MultiCategorical samples scalars
    assert x.shape == (*prefix, *shape)
    assert spec.is_in(x), spec.invalid_reason(x)
    mask = getattr(spec, "mask", None)
    if mask is not None and isinstance(spec, Categorical):
        allowed = mask.expand(*prefix, *mask.shape).gather(-1, x.unsqueeze(-1))
        assert allowed.all()
    if mask is not None and isinstance(spec, (OneHot, MultiOneHot)):
        assert not (x.bool() & ~mask).any()


@SETTINGS
@given(spec=discrete_specs(), data=st.data())
def test_discrete_project_lands_inside(spec, data) -> None:
    vals = data.draw(arrays(np.float32, tuple(spec.shape), elements=st.floats(-20, 20, width=32)))
    out = spec.project(torch.from_numpy(vals))
    assert spec.is_in(out), spec.invalid_reason(out)


@SETTINGS
@given(
    base=arrays(np.float32, (4,), elements=st.floats(-(2.0**100), 2.0**100, width=32)),
    ulps=arrays(np.int64, (4,), elements=st.integers(0, 3)),
)
def test_bounded_tight_ranges_rand_is_in(base: np.ndarray, ulps: np.ndarray) -> None:
    """Ranges a few ulps wide are where rounding of ``low + r * (high - low)`` can overshoot."""
    low = torch.from_numpy(np.asarray(base))
    high = low.clone()
    for _ in range(int(ulps.max())):
        high = torch.where(torch.from_numpy(ulps) > 0, torch.nextafter(high, high + 1), high)
        ulps = ulps - 1
    spec = Bounded(low, high)
    x = spec.rand((2000,))
    assert spec.is_in(x), spec.invalid_reason(x)
