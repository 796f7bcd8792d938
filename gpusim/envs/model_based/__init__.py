"""Model-based envs: ``ModelBasedEnvBase`` (a world model as the transition) and Dreamer's
imagination env ``DreamerEnv``. Its ``DreamerDecoder`` is a transform:
:class:`gpusim.transforms.DreamerDecoder` (``gpusim.DreamerDecoder``), since envs do not import
transforms.

Examples:
    >>> from gpusim.envs.model_based import DreamerEnv, ModelBasedEnvBase
    >>> issubclass(DreamerEnv, ModelBasedEnvBase)
    True
"""

from gpusim.envs.model_based.common import ModelBasedEnvBase
from gpusim.envs.model_based.dreamer import DreamerEnv

__all__ = ["ModelBasedEnvBase", "DreamerEnv"]
