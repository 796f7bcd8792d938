"""TensorSpec family: shapes, dtypes, devices and valid values of env inputs and outputs.

Examples:
    >>> from gpusim.specs import Bounded, Composite
    >>> spec = Composite(obs=Bounded(-1.0, 1.0, shape=(8, 3)), shape=(8,))
    >>> spec.rand().batch_size
    torch.Size([8])
"""

from gpusim.specs.base import DEVICE_TYPING, SpecValueError, TensorSpec, as_size, make_device
from gpusim.specs.choice import Choice
from gpusim.specs.composite import Composite, NestedKey
from gpusim.specs.continuous import (
    Bounded,
    BoundedContinuous,
    BoundedDiscrete,
    Unbounded,
    UnboundedContinuous,
    UnboundedDiscrete,
)
from gpusim.specs.discrete import Binary, Categorical, OneHot
from gpusim.specs.functional import index_select_spec, stack_specs
from gpusim.specs.multi import MultiCategorical, MultiOneHot
from gpusim.specs.nontensor import NonTensor
from gpusim.specs.spaces import (
    BinaryBox,
    Box,
    BoxList,
    CategoricalBox,
    ContinuousBox,
    DiscreteBox,
    MultiCategoricalBox,
)
from gpusim.specs.stacked import Stacked
from gpusim.specs.stacked_composite import StackedComposite
from gpusim.specs.utils import check_no_exclusive_keys, consolidate_spec, contains_lazy_spec

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
LazyStackedTensorSpec = Stacked
LazyStackedCompositeSpec = StackedComposite

__all__ = [
    "DEVICE_TYPING",
    "NestedKey",
    "TensorSpec",
    "SpecValueError",
    "Composite",
    "Bounded",
    "BoundedContinuous",
    "BoundedDiscrete",
    "Unbounded",
    "UnboundedContinuous",
    "UnboundedDiscrete",
    "Categorical",
    "OneHot",
    "MultiCategorical",
    "MultiOneHot",
    "Binary",
    "NonTensor",
    "Choice",
    "Stacked",
    "StackedComposite",
    "stack_specs",
    "index_select_spec",
    "consolidate_spec",
    "check_no_exclusive_keys",
    "contains_lazy_spec",
    "Box",
    "ContinuousBox",
    "CategoricalBox",
    "DiscreteBox",
    "MultiCategoricalBox",
    "BoxList",
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
    "LazyStackedTensorSpec",
    "LazyStackedCompositeSpec",
]
