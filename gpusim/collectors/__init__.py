"""Data collection for training loops: :class:`Collector` (TorchRL's collector API; also named
``SyncDataCollector``) yields ``[*B, T]`` batches from a gpusim env and a policy, eagerly or
through one compiled graph; :class:`DistributedSyncDataCollector` runs one per rank of a
``torch.distributed`` job.

Examples:
    >>> import gpusim as gs
    >>> collector = gs.Collector(gs.make("CartPole-v1", num_envs=4, seed=0), frames_per_batch=8, total_frames=8)
    >>> next(iter(collector)).shape
    torch.Size([4, 2])
"""

from gpusim.collectors.collector import Collector, SyncDataCollector
from gpusim.collectors.distributed import (
    CommError,
    DistributedSyncDataCollector,
    init_distributed,
    init_stats_distributed,
)

__all__ = [
    "Collector",
    "SyncDataCollector",
    "DistributedSyncDataCollector",
    "init_distributed",
    "init_stats_distributed",
    "CommError",
]
