"""gpusim specs to TorchRL specs: same class name, shape, dtype, device and parameters, and the two
agree on which values are inside (one generic body over every spec kind)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("torchrl", reason="torchrl is not installed (CI runs these tests in its torchrl venv)")

from gpusim import specs as gspecs  # noqa: E402
from gpusim.interop.torchrl_specs import to_torchrl_spec  # noqa: E402

B = (3,)
SPECS = {
    "bounded": lambda: gspecs.Bounded(torch.tensor([-1.0, 0.0]), torch.tensor([1.0, 5.0]), shape=(*B, 2)),
    "bounded_int": lambda: gspecs.Bounded(0, 9, shape=(*B, 1), dtype=torch.int64),
    "unbounded": lambda: gspecs.Unbounded((*B, 4), dtype=torch.float64),
    "unbounded_int": lambda: gspecs.UnboundedDiscrete((*B, 2)),
    "categorical": lambda: gspecs.Categorical(5, shape=B),
    "categorical_mask": lambda: gspecs.Categorical(3, shape=B, mask=torch.tensor([True, False, True]).expand(3, 3)),
    "onehot": lambda: gspecs.OneHot(4, shape=(*B, 4)),
    "multicategorical": lambda: gspecs.MultiCategorical([2, 3], shape=(*B, 2)),
    "multionehot": lambda: gspecs.MultiOneHot([2, 3], shape=(*B, 5)),
    "binary": lambda: gspecs.Binary(3, shape=(*B, 3)),
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_leaf_conversion(name):
    ours = SPECS[name]()
    theirs = to_torchrl_spec(ours)
    assert type(theirs).__module__.startswith("torchrl.")
    assert type(ours).__name__ in {c.__name__ for c in type(theirs).__mro__}  # TorchRL's class of that name
    assert (theirs.shape, theirs.dtype, theirs.device) == (ours.shape, ours.dtype, ours.device)
    for _ in range(3):  # values drawn by one side are inside the other
        assert theirs.is_in(ours.rand()) and ours.is_in(theirs.rand())
    assert ours.is_in(theirs.zero()) == theirs.is_in(ours.zero())


def test_bounds_masks_and_nvec_are_carried():
    bounded = to_torchrl_spec(SPECS["bounded"]())
    assert torch.equal(bounded.space.low, torch.tensor([-1.0, 0.0]).expand(3, 2))
    masked = to_torchrl_spec(SPECS["categorical_mask"]())
    assert (masked.rand() != 1).all()
    assert to_torchrl_spec(SPECS["multicategorical"]()).nvec.tolist() == [[2, 3]] * 3


def test_nested_composite():
    spec = gspecs.Composite(
        obs=gspecs.Unbounded((*B, 2)),
        agents=gspecs.Composite(action=gspecs.Categorical(2, shape=(*B, 4)), shape=(*B, 4)),
        shape=B,
    )
    theirs = to_torchrl_spec(spec)
    assert type(theirs).__name__ == "Composite" and theirs.shape == B
    assert theirs["agents"].shape == (*B, 4) and theirs["agents", "action"].shape == (*B, 4)
    assert theirs.is_in(spec.rand())


def test_a_spec_without_equivalent_is_named():
    class Odd(gspecs.TensorSpec):
        def __init__(self):
            self.shape, self.dtype, self.device = torch.Size(B), torch.float32, torch.device("cpu")

        def _rand(self, full_shape):
            return torch.zeros(full_shape)

        def _invalid_reason(self, val):
            return None

        def _project(self, val):
            return val

    with pytest.raises(TypeError, match=r"key \('group', 'odd'\) is a Odd, which has no TorchRL equivalent"):
        to_torchrl_spec(gspecs.Composite(group=gspecs.Composite(odd=Odd(), shape=B), shape=B))
