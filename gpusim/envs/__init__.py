"""Environments: ``EnvBase``, helpers, native batched envs, batched CPU envs and wrappers.

TorchRL's ``torchrl.envs`` also holds the transforms: so does ``gpusim.envs`` (``from
gpusim.envs import TransformedEnv, StepCounter``), and ``gpusim.envs.transforms`` is TorchRL's
``torchrl.envs.transforms``: the top-level package installs these aliases of
:mod:`gpusim.transforms` (this package never imports the transforms).

Examples:
    >>> from gpusim.envs import StepCounter, TransformedEnv, CartPoleEnv
    >>> TransformedEnv(CartPoleEnv(), StepCounter()).rollout(2).shape
    torch.Size([2])
    >>> from gpusim.envs import CartPoleEnv, check_env_specs, step_mdp
    >>> env = CartPoleEnv(batch_size=[4], seed=0)
    >>> check_env_specs(env)  # a short rollout matches the specs
    >>> td = env.rand_step(env.reset())
    >>> step_mdp(td)["observation"].shape  # the root of the next step
    torch.Size([4, 4])
"""

# ruff: noqa: E402

from gpusim.envs._rollout_cache import clear_rollout_cache, rollout_cache_info
from gpusim.envs.async_pool import AsyncEnvPool, ProcessorAsyncEnvPool, ThreadingAsyncEnvPool
from gpusim.envs.batched import *  # noqa: F401,F403
from gpusim.envs.batched import __all__ as _batched_all
from gpusim.envs.checks import check_env_specs
from gpusim.envs.common import EnvBase
from gpusim.envs.compiled import CompiledRollout
from gpusim.envs.custom import *  # noqa: F401,F403
from gpusim.envs.custom import __all__ as _custom_all
from gpusim.envs.libs import *  # noqa: F401,F403
from gpusim.envs.libs import __all__ as _libs_all
from gpusim.envs.model_based import DreamerEnv, ModelBasedEnvBase
from gpusim.envs.native import *  # noqa: F401,F403
from gpusim.envs.native import __all__ as _native_all
from gpusim.envs.utils import (
    ExplorationType,
    RandomPolicy,
    StepMDP,
    exploration_type,
    get_available_libraries,
    make_composite_from_td,
    set_exploration_type,
    step_mdp,
    terminated_or_truncated,
)

__all__ = [
    *_batched_all,
    *_libs_all,
    *_native_all,
    *_custom_all,
    "ModelBasedEnvBase",
    "DreamerEnv",
    "CompiledRollout",
    "EnvBase",
    "AsyncEnvPool",
    "ThreadingAsyncEnvPool",
    "ProcessorAsyncEnvPool",
    "clear_rollout_cache",
    "rollout_cache_info",
    "check_env_specs",
    "step_mdp",
    "StepMDP",
    "terminated_or_truncated",
    "make_composite_from_td",
    "RandomPolicy",
    "ExplorationType",
    "set_exploration_type",
    "exploration_type",
    "get_available_libraries",
]
