"""Choice: a random pick among specs or among fixed non-tensor values."""

from __future__ import annotations

import pytest
import torch
from tensordict import NonTensorData, NonTensorStack
from tensordict.utils import set_capture_non_tensor_stack

from gpusim.specs import Bounded, Categorical, Choice

CHOICES = {
    "spec": lambda: [Bounded(0.0, 1.0, shape=()), Bounded(5.0, 6.0, shape=())],
    "nontensor": lambda: [NonTensorData("left"), NonTensorData("right")],
    "nontensorstack": lambda: [NonTensorStack("p", "q", "r"), NonTensorStack("s", "t", "u")],
}
INSIDE = {
    "spec": torch.tensor(5.5),
    "nontensor": NonTensorData("right"),
    "nontensorstack": NonTensorStack("s", "t", "u"),
}
OUTSIDE = {
    "spec": torch.tensor(3.0),
    "nontensor": NonTensorData("up"),
    "nontensorstack": NonTensorStack("q", "p", "r"),
}


@pytest.mark.parametrize("kind", list(CHOICES))
def test_choice_generic(kind: str) -> None:
    spec = Choice(CHOICES[kind]())
    torch.manual_seed(0)
    draws = [spec.rand() for _ in range(20)]
    assert all(spec.is_in(d) for d in draws)
    assert spec.is_in(INSIDE[kind]) and not spec.is_in(OUTSIDE[kind])
    assert spec.clone() == spec and spec.clone() is not spec
    assert spec.to("cpu").device == torch.device("cpu")
    assert spec.expand(4, *spec.shape).shape == (4, *spec.shape)
    assert spec.num_choices == 2
    if kind == "spec":
        values = {float(d) < 3 for d in draws}
        assert values == {True, False}  # both choices get picked
        assert spec.cardinality() == float("inf")
    else:
        assert spec.cardinality() == 2
        assert spec.rand() is not spec._choices[0]  # a copy, not the stored value


def test_choice_cardinality_of_discrete_specs() -> None:
    assert Choice([Categorical(3), Categorical(7), Categorical(2)]).cardinality() == 12


def test_choice_errors() -> None:
    with pytest.raises(TypeError, match="must be a list"):
        Choice("abc")
    with pytest.raises(TypeError, match="must be either a TensorSpec, NonTensorData, or NonTensorStack"):
        Choice(["abc"])
    with pytest.raises(TypeError, match="must be the same type"):
        Choice([Bounded(0, 1, (1,)), Categorical(10, (1,))])
    with pytest.raises(ValueError, match="must have the same shape"):
        Choice([Categorical(10, (1,)), Categorical(10, (2,))])
    with pytest.raises(ValueError, match="must have the same dtype"):
        Choice([Categorical(10, (2,)), Categorical(10, (2,), dtype=torch.int32)])
    with pytest.raises(NotImplementedError, match="project"):
        Choice([Categorical(3), Categorical(4)])._project(torch.tensor(7))


@set_capture_non_tensor_stack(False)
@pytest.mark.parametrize("kind", ["spec", "nontensor"])
def test_stack_of_choices_is_a_choice(kind: str) -> None:
    spec = Choice(CHOICES[kind]())
    out = torch.stack([spec, spec.clone()], 0)
    assert isinstance(out, Choice) and out.shape == (2, *spec.shape)
