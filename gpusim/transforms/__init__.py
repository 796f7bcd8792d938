"""Transforms: ``Transform``, ``TransformedEnv``, ``Compose`` and the transform families.

Examples:
    >>> from gpusim.transforms import Compose, Transform, TransformedEnv
    >>> isinstance(Compose(), Transform)
    True
"""

from gpusim.transforms.transform import Transform
from gpusim.transforms.compose import Compose
from gpusim.transforms.transformed_env import TransformedEnv
