"""CatTensors.transform_observation_spec on a bare observation Composite (no env)."""

from __future__ import annotations

import pytest
import torch

from gpusim.specs import Bounded, Composite, Unbounded
from gpusim.transforms import CatTensors


def test_nested_out_key_and_bounds():
    t = CatTensors([("x", "a"), "b"], out_key=("some", "ab"), dim=-2)
    spec = Composite(x=Composite(a=Bounded(0.0, 1.0, (4, 3))), b=Bounded(-1.0, 2.0, (2, 3)))
    spec = t.transform_observation_spec(spec)
    assert ("x", "a") not in spec.keys(True, True) and "b" not in spec.keys()
    out = spec["some", "ab"]
    # in_keys are sorted (TorchRL): "b" first, then ("x", "a")
    assert out.shape == (6, 3) and out.low[:2].eq(-1).all() and out.high[2:].eq(1).all()


def test_keep_inputs_and_unbounded():
    t = CatTensors(["a", "b"], out_key="ab", del_keys=False)
    spec = t.transform_observation_spec(Composite(a=Unbounded((2,)), b=Bounded(0, 1, (1,), dtype=torch.float64)))
    assert set(spec.keys()) == {"a", "b", "ab"}
    assert isinstance(spec["ab"], Unbounded) and spec["ab"].dtype == torch.float64


def test_bad_specs_raise():
    with pytest.raises(KeyError, match="in_keys entry 'c' is not in the env's specs"):
        CatTensors(["a", "c"], out_key="ac").transform_observation_spec(Composite(a=Unbounded((2,))))
    with pytest.raises(ValueError, match="cannot concatenate"):
        CatTensors(["a", "b"], out_key="ab", dim=-2).transform_observation_spec(
            Composite(a=Unbounded((2, 3)), b=Unbounded((2, 4)))
        )
