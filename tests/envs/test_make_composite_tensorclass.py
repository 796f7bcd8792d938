"""make_composite_from_td on tensorclass entries: a Composite of the fields with the class as
``data_cls``, so that zero()/one() rebuild the class (strings and objects as example data)."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorClass, TensorDict

from gpusim.envs.utils import make_composite_from_td
from gpusim.specs import Composite, NonTensor


class Record(TensorClass):
    obs: torch.Tensor
    label: str
    extra: Any


class Marker:
    pass


def test_tensorclass_entry_becomes_a_composite_of_its_class():
    marker = Marker()
    td = TensorDict(
        rec=Record(obs=torch.ones(4, 2), label="hello", extra=marker, batch_size=(4,)), note="n", batch_size=(4,)
    )
    spec = make_composite_from_td(td)
    assert isinstance(spec["rec"], Composite) and spec["rec"].data_cls is Record
    assert isinstance(spec["rec", "label"], NonTensor) and spec["rec", "label"].example_data == "hello"
    assert spec["rec", "obs"].shape == (4, 2)
    one = spec.one()
    assert isinstance(one["rec"], Record) and one["rec"].label == "hello" and one["rec"].extra is marker
    assert (one == td).all()
    zero = spec.zero()
    assert isinstance(zero["rec"], Record) and zero["rec"].obs.eq(0).all()
