"""TensorSpec family: shapes, dtypes, devices and valid values of env inputs and outputs.

Examples:
    >>> from gpusim.specs import Bounded, Composite
    >>> spec = Composite(obs=Bounded(-1.0, 1.0, shape=(8, 3)), shape=(8,))
    >>> spec.rand().batch_size
    torch.Size([8])
"""

from gpusim.specs.base import DEVICE_TYPING, TensorSpec, as_size, make_device
from gpusim.specs.composite import Composite, NestedKey
from gpusim.specs.leaves import (
    Binary,
    Bounded,
    Categorical,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    Unbounded,
    UnboundedDiscrete,
)
from gpusim.specs.spaces import BinaryBox, CategoricalBox, ContinuousBox, MultiCategoricalBox

# Old TorchRL names.
CompositeSpec = Composite
BoundedTensorSpec = Bounded
UnboundedContinuousTensorSpec = Unbounded
UnboundedDiscreteTensorSpec = UnboundedDiscrete
DiscreteTensorSpec = Categorical
OneHotDiscreteTensorSpec = OneHot
MultiDiscreteTensorSpec = MultiCategorical
MultiOneHotDiscreteTensorSpec = MultiOneHot
BinaryDiscreteTensorSpec = Binary
NonTensorSpec = NonTensor

__all__ = [
    "DEVICE_TYPING",
    "NestedKey",
    "TensorSpec",
    "Composite",
    "Bounded",
    "Unbounded",
    "UnboundedDiscrete",
    "Categorical",
    "OneHot",
    "MultiCategorical",
    "MultiOneHot",
    "Binary",
    "NonTensor",
    "ContinuousBox",
    "CategoricalBox",
    "MultiCategoricalBox",
    "BinaryBox",
    "make_device",
    "as_size",
    "CompositeSpec",
    "BoundedTensorSpec",
    "UnboundedContinuousTensorSpec",
    "UnboundedDiscreteTensorSpec",
    "DiscreteTensorSpec",
    "OneHotDiscreteTensorSpec",
    "MultiDiscreteTensorSpec",
    "MultiOneHotDiscreteTensorSpec",
    "BinaryDiscreteTensorSpec",
    "NonTensorSpec",
]
