"""Model-based envs: ``ModelBasedEnvBase`` (a world model as the transition) and Dreamer's
imagination env ``DreamerEnv``. ``DreamerDecoder`` (a transform) lives in
:mod:`gpusim.transforms.dreamer` and is re-exported here on first access.

Examples:
    >>> from gpusim.envs.model_based import DreamerEnv, ModelBasedEnvBase
    >>> issubclass(DreamerEnv, ModelBasedEnvBase)
    True
"""

from typing import Any

from gpusim.envs.model_based.common import ModelBasedEnvBase
from gpusim.envs.model_based.dreamer import DreamerEnv

__all__ = ["ModelBasedEnvBase", "DreamerEnv", "DreamerDecoder"]


def __getattr__(name: str) -> Any:
    if name == "DreamerDecoder":  # a transform: imported lazily (envs do not import transforms)
        from gpusim.transforms.dreamer import DreamerDecoder

        return DreamerDecoder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
