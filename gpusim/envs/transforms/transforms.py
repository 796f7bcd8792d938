"""``gpusim.envs.transforms.transforms``: TorchRL's module path of the transform classes
(``torchrl.envs.transforms.transforms``), the same objects as :mod:`gpusim.transforms`.

Examples:
    >>> from gpusim.envs.transforms.transforms import Compose
    >>> Compose().transforms.__len__()
    0
"""

import gpusim.transforms as _transforms
from gpusim.transforms import *  # noqa: F401,F403


def __getattr__(name: str):
    """Names added to :mod:`gpusim.transforms` are found here too."""
    try:
        return getattr(_transforms, name)
    except AttributeError:
        raise AttributeError(f"module 'gpusim.envs.transforms.transforms' has no attribute {name!r}") from None
