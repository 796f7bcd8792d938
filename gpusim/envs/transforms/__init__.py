"""``gpusim.envs.transforms``: the transforms under TorchRL's import path
(``torchrl.envs.transforms``), the same objects as :mod:`gpusim.transforms`.

Examples:
    >>> from gpusim.envs.transforms import StepCounter, TransformedEnv
    >>> import gpusim.transforms
    >>> StepCounter is gpusim.transforms.StepCounter
    True
"""

import gpusim.transforms as _transforms
from gpusim.transforms import *  # noqa: F401,F403


def __getattr__(name: str):
    """Names added to :mod:`gpusim.transforms` are found here too."""
    try:
        return getattr(_transforms, name)
    except AttributeError:
        raise AttributeError(f"module 'gpusim.envs.transforms' has no attribute {name!r}") from None
