"""Environments: ``EnvBase``, helpers, native batched envs, batched CPU envs and wrappers."""

# ruff: noqa: E402

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

from gpusim.envs.compiled import CompiledRollout
from gpusim.envs._rollout_cache import clear_rollout_cache, rollout_cache_info
from gpusim.envs.batched import *  # noqa: F401,F403
from gpusim.envs.batched import __all__ as _batched_all
from gpusim.envs.libs import *  # noqa: F401,F403
from gpusim.envs.libs import __all__ as _libs_all
from gpusim.envs.native import *  # noqa: F401,F403
from gpusim.envs.native import __all__ as _native_all
from gpusim.envs.custom import *  # noqa: F401,F403
from gpusim.envs.custom import __all__ as _custom_all
from gpusim.envs.model_based import DreamerEnv, ModelBasedEnvBase

__all__ = [
    *_batched_all,
    *_libs_all,
    *_native_all,
    *_custom_all,
    "ModelBasedEnvBase",
    "DreamerEnv",
    "CompiledRollout",
    "EnvBase",
    "clear_rollout_cache",
    "rollout_cache_info",
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
