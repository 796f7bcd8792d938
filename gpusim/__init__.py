"""gpusim: GPU-first vectorized RL environments with the ``torchrl.envs`` API.

Examples:
    >>> import gpusim as gs
    >>> spec = gs.Bounded(-1.0, 1.0, shape=(4, 2))
    >>> spec.rand().shape
    torch.Size([4, 2])
"""

from gpusim.specs import *  # noqa: F401,F403
from gpusim.specs import __all__ as _specs_all
from gpusim.envs import *  # noqa: F401,F403
from gpusim.envs import __all__ as _envs_all

__version__ = "0.1.0"
__all__ = [*_specs_all, *_envs_all]
