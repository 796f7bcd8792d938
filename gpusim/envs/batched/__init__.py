"""Batched CPU envs: ``SerialEnv``, ``ParallelEnv``, ``EnvCreator`` and env metadata.

These are the thin CPU fallback for envs that are not tensor programs (gymnasium): several
envs, in this process or in worker processes, presented as one env of batch
``[num_workers, *sub_batch]`` with the ordinary ``EnvBase`` interface.

Examples:
    >>> from gpusim.envs.batched import SerialEnv
    >>> from gpusim.envs.native import CartPoleEnv
    >>> SerialEnv(2, CartPoleEnv).rollout(3, break_when_any_done=False).shape
    torch.Size([2, 3])
"""

from gpusim.envs.batched.base import BatchedEnvBase
from gpusim.envs.batched.env_creator import EnvCreator
from gpusim.envs.batched.metadata import EnvMetaData, get_env_metadata
from gpusim.envs.batched.parallel import ParallelEnv, WorkerError, WorkerTimeoutError
from gpusim.envs.batched.serial import SerialEnv

__all__ = [
    "BatchedEnvBase",
    "EnvCreator",
    "EnvMetaData",
    "ParallelEnv",
    "SerialEnv",
    "WorkerError",
    "WorkerTimeoutError",
    "get_env_metadata",
]
