"""Environments: ``EnvBase``, helpers, native batched envs, batched CPU envs and wrappers."""

from gpusim.envs.checks import check_env_specs
from gpusim.envs.common import EnvBase
from gpusim.envs.utils import (
    ExplorationType,
    RandomPolicy,
    exploration_type,
    get_available_libraries,
    make_composite_from_td,
    set_exploration_type,
    step_mdp,
    terminated_or_truncated,
)

__all__ = [
    "EnvBase",
    "check_env_specs",
    "step_mdp",
    "terminated_or_truncated",
    "make_composite_from_td",
    "RandomPolicy",
    "ExplorationType",
    "set_exploration_type",
    "exploration_type",
    "get_available_libraries",
]
