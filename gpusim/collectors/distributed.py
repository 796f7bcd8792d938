"""``DistributedSyncDataCollector``: one :class:`~gpusim.collectors.Collector` per rank of a
``torch.distributed`` job, each rank stepping its share of the envs on its own device.

TorchRL's ``torchrl.collectors.distributed.DistributedSyncDataCollector`` is its collector built
on ``torch.distributed`` whose batches are synchronous (every worker delivers its share of each
batch); gpusim keeps the name and the arguments' meaning (``frames_per_batch``/``total_frames``
count the frames of all the ranks) but runs SPMD: every rank of a ``torchrun`` launch builds the
collector and iterates it (there is no launcher and no main-node-only loop).

* Process group: the group given (``group=``), else the default one when it is initialised, else
  one made from torchrun's environment (:func:`init_distributed`: NCCL on GPUs, gloo on CPU).
* Envs: ``create_env_fn(num_envs=num_envs // world_size, **create_env_kwargs)`` on each rank (or
  the env instance each rank passes), moved to ``device`` (default: the rank's GPU with NCCL).
* Seeds: rank ``r`` seeds its env with ``seed + r * n_local`` (``n_local`` = envs per rank), so the
  ranks' streams differ, and a host-backed vector env that seeds its rows ``seed + i`` gives every
  env row of the job its own seed, as one process holding all the envs would.
* Weights: at construction and at every :meth:`~DistributedSyncDataCollector.update_policy_weights_`
  the policy's parameters and buffers are broadcast from rank 0 (one collective per dtype).
* Data: each rank yields its local ``[*B_local, T]`` batch (data-parallel training), or, with
  ``gather=True``, rank 0 yields the ``[*B, T]`` batch of all the ranks (ranks concatenated along
  the first batch dim, in rank order) and the other ranks yield ``None``. Trajectory ids are made
  unique over the job: ``id * world_size + rank``.
* Statistics: after every batch the ``VecNorm`` statistics of every rank's env are all-reduced
  (one collective, :meth:`~DistributedSyncDataCollector.sync_stats`, which also checks that the
  ranks are at the same batch) so that they equal one
  process's statistics over all the data (for a ``VecNorm`` updated once per env step, as a
  ``TransformedEnv`` does: its decay is applied ``steps per batch`` times); ``ObservationNorm``
  statistics must agree across ranks (checked at construction; compute them with
  :func:`init_stats_distributed`).
  :meth:`~DistributedSyncDataCollector.episode_stats` gathers the episodes of every rank.
* Failures: collectives run under the group's timeout and a watchdog; a rank that dies or stalls
  makes the others raise :class:`CommError` (or, if the backend never returns, exit with status
  124 after ``2 * timeout`` with the message on stderr) instead of hanging.

Every rank must call the collective methods (iteration, ``update_policy_weights_``,
``episode_stats``, ``sync_stats``) in the same order.

Examples:
    >>> import os, socket
    >>> import torch.distributed as dist
    >>> import gpusim as gs
    >>> with socket.socket() as s:
    ...     _ = s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    >>> dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64, num_envs=8,
    ...                                          create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
    >>> [data.shape for data in collector]
    [torch.Size([8, 4]), torch.Size([8, 4])]
    >>> collector.shutdown(); dist.destroy_process_group()
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.distributed as dist
from tensordict import TensorDictBase
from torch import nn

from gpusim.collectors._comm import Comm, CommError, init_distributed, pack, unpack_
from gpusim.collectors._episodes import split_trajectories
from gpusim.collectors._stats import VecNormSync, init_stats_distributed
from gpusim.collectors.collector import Collector, _positive_int
from gpusim.envs.common import EnvBase
from gpusim.transforms.normalization import ObservationNorm

__all__ = ["DistributedSyncDataCollector", "init_distributed", "init_stats_distributed", "CommError"]


class DistributedSyncDataCollector:
    """A :class:`~gpusim.collectors.Collector` per rank of a ``torch.distributed`` job (see the
    module docstring for the layout of envs, seeds, weights, data and statistics).

    Args:
        create_env_fn: a callable building the rank's env, called with
            ``num_envs=num_envs // world_size`` (when ``num_envs`` is given) and
            ``create_env_kwargs``; or the rank's env itself.
        policy: as :class:`~gpusim.collectors.Collector`'s (the same module on every rank: its
            weights are broadcast from rank 0 at construction).
        frames_per_batch: frames of one batch over all the ranks (a multiple of the world size).
        total_frames: frames over all the ranks (``-1``: endless).
        num_envs: envs over all the ranks (a multiple of the world size), passed to
            ``create_env_fn`` as the rank's share; None: ``create_env_fn`` is called as it is.
        device: the device of the rank's env and policy (default: ``cuda:<current device>``
            with NCCL, else the env's own).
        create_env_kwargs: keyword arguments of ``create_env_fn``.
        seed: base seed (rank ``r`` uses ``seed + r * n_local``); None leaves the envs as built.
        gather: gather every batch on rank 0 (the other ranks yield None).
        group: the process group (default: the default group, made with
            :func:`init_distributed` from torchrun's environment when not initialised).
        timeout: seconds a collective may block before the watchdog ends the process (after
            ``2 * timeout``); give the same value as the group's ``init_process_group`` timeout.
        watchdog: run the watchdog.
        postproc: applied to each yielded batch (after the gathering).
        split_trajs: split the yielded batches into trajectories (after the gathering).
        **collector_kwargs: the other :class:`~gpusim.collectors.Collector` arguments
            (``compile``, ``exploration_type``, ``init_random_frames`` (counted over all the
            ranks), ...).

    Raises:
        ValueError: ``frames_per_batch``/``num_envs`` not a multiple of the world size.
        CommError: a collective failed (a peer died or stalled), or the ranks' ``ObservationNorm``
            statistics differ.

    Examples:
        >>> import os, socket, torch
        >>> import torch.distributed as dist
        >>> import gpusim as gs
        >>> from tensordict.nn import TensorDictModule
        >>> with socket.socket() as s:
        ...     _ = s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
        >>> dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
        >>> policy = TensorDictModule(lambda obs: (obs[..., 2] > 0).long(), ["observation"], ["action"])
        >>> env = gs.TransformedEnv(gs.make("CartPole-v1", num_envs=4), gs.VecNorm(in_keys=["observation"], decay=1.0))
        >>> collector = DistributedSyncDataCollector(env, policy, frames_per_batch=16, total_frames=32, seed=1, gather=True)
        >>> for data in collector:
        ...     collector.update_policy_weights_()
        >>> data.shape, collector.frames, collector.rank, collector.world_size
        (torch.Size([4, 4]), 32, 0, 1)
        >>> collector.shutdown(); dist.destroy_process_group()
    """

    def __init__(
        self,
        create_env_fn: EnvBase | Callable[..., EnvBase],
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        *,
        frames_per_batch: int,
        total_frames: int = -1,
        num_envs: int | None = None,
        device: torch.device | str | None = None,
        create_env_kwargs: dict | None = None,
        seed: int | None = None,
        gather: bool = False,
        group: dist.ProcessGroup | None = None,
        timeout: float = 300.0,
        watchdog: bool = True,
        postproc: Callable[[TensorDictBase], TensorDictBase] | None = None,
        split_trajs: bool = False,
        **collector_kwargs: Any,
    ) -> None:
        for name in ("reset_at_each_iter",):
            if collector_kwargs.get(name):
                raise ValueError(f"DistributedSyncDataCollector does not support {name}=True")
        self._owns_group = False
        if group is None:
            self._owns_group = not dist.is_initialized()
            group = init_distributed(timeout=timeout)
        self.comm = Comm(group, timeout=timeout, watchdog=watchdog)
        ws, _rank = self.comm.world_size, self.comm.rank
        frames_per_batch = _positive_int("frames_per_batch", frames_per_batch)
        if frames_per_batch % ws:
            raise ValueError(f"frames_per_batch ({frames_per_batch}) must be a multiple of the world size ({ws})")
        if device is None and self.comm.backend == "nccl":
            device = self.comm.device
        kwargs = dict(create_env_kwargs or {})
        if num_envs is not None:
            num_envs = _positive_int("num_envs", num_envs)
            if num_envs % ws:
                raise ValueError(f"num_envs ({num_envs}) must be a multiple of the world size ({ws})")
            if isinstance(create_env_fn, EnvBase):
                raise TypeError("num_envs is only used with an env factory (create_env_fn), not an env instance")
            kwargs["num_envs"] = num_envs // ws
        if collector_kwargs.get("init_random_frames"):  # a count over all the ranks, as frames_per_batch
            collector_kwargs["init_random_frames"] = math.ceil(collector_kwargs["init_random_frames"] / ws)
        self.gather = bool(gather)
        self.postproc = postproc
        self.split_trajs = bool(split_trajs)
        self.collector = Collector(
            create_env_fn,
            policy,
            frames_per_batch=frames_per_batch // ws,
            total_frames=-1,
            device=device,
            create_env_kwargs=kwargs or None,
            **collector_kwargs,
        )
        if self.split_trajs and not self.collector.track_traj_ids:
            raise ValueError("split_trajs=True needs track_traj_ids=True (trajectories are split by their ids)")
        self.frames_per_batch = self.collector.frames_per_batch * ws
        self.total_frames = _positive_int("total_frames", total_frames, allow=(-1,))
        self._frames = 0
        self._batches = 0
        self._stats = VecNormSync(self.env, self.comm)
        self._obs_norms = [m for m in self.env.modules() if isinstance(m, ObservationNorm) and m.initialized]
        if seed is not None:
            self.set_seed(seed)
        # one broadcast: rank 0's weights and VecNorm statistics; then the ObservationNorm check
        self.comm.broadcast_(
            self._weights() + self._stats.start(), "initial broadcast of the policy weights and statistics"
        )
        self._stats.snapshot()
        self._check_obs_norms()

    # ------------------------------------------------------------------ properties
    @property
    def env(self) -> EnvBase:
        """This rank's env.

        Examples:
            (one rank; under ``torchrun`` every rank runs the same lines)

            >>> import torch.distributed as dist
            >>> import gpusim as gs
            >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64,
            ...     num_envs=8, create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
            >>> type(collector.env).__name__, collector.env.batch_size  # 8 // world_size envs
            ('TransformedEnv', torch.Size([8]))
            >>> collector.shutdown(); dist.destroy_process_group()
        """
        return self.collector.env

    @property
    def policy(self) -> Any:
        """The policy (the same object on every rank's collector).

        Examples:
            (one rank; under ``torchrun`` every rank runs the same lines)

            >>> import torch.distributed as dist
            >>> import gpusim as gs
            >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64,
            ...     num_envs=8, create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
            >>> collector.policy is None  # random actions
            True
            >>> collector.shutdown(); dist.destroy_process_group()
        """
        return self.collector.policy

    @property
    def rank(self) -> int:
        """This process's rank in the group.

        Examples:
            (one rank; under ``torchrun`` every rank runs the same lines)

            >>> import torch.distributed as dist
            >>> import gpusim as gs
            >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64,
            ...     num_envs=8, create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
            >>> collector.rank
            0
            >>> collector.shutdown(); dist.destroy_process_group()
        """
        return self.comm.rank

    @property
    def world_size(self) -> int:
        """The number of ranks.

        Examples:
            (one rank; under ``torchrun`` every rank runs the same lines)

            >>> import torch.distributed as dist
            >>> import gpusim as gs
            >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64,
            ...     num_envs=8, create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
            >>> collector.world_size
            1
            >>> collector.shutdown(); dist.destroy_process_group()
        """
        return self.comm.world_size

    @property
    def frames(self) -> int:
        """Frames collected so far by all the ranks.

        Examples:
            (one rank; under ``torchrun`` every rank runs the same lines)

            >>> import torch.distributed as dist
            >>> import gpusim as gs
            >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64,
            ...     num_envs=8, create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
            >>> collector.frames, collector.next().shape, collector.frames
            (0, torch.Size([8, 4]), 32)
            >>> collector.shutdown(); dist.destroy_process_group()
        """
        return self._frames

    def __len__(self) -> int:
        if self.total_frames < 0:
            raise TypeError("an endless collector (total_frames=-1) has no length")
        return math.ceil(self.total_frames / self.frames_per_batch)

    # ------------------------------------------------------------------ collectives
    def _weights(self) -> list[torch.Tensor]:
        policy = self.policy
        if not isinstance(policy, nn.Module):
            return []
        return [t for _, t in sorted(policy.state_dict().items())]  # detached views of the weights

    def _check_obs_norms(self) -> None:
        if not self._obs_norms or self.world_size == 1:
            return
        mine = [t for m in self._obs_norms for t in (m.loc, m.scale)]
        theirs = [t.clone() for t in mine]
        self.comm.broadcast_(theirs, "ObservationNorm statistics check")
        bad = torch.tensor([float(not all(torch.equal(a, b) for a, b in zip(mine, theirs)))])
        self.comm.all_reduce_([bad], "ObservationNorm statistics check")
        if bad.item() > 0:
            raise CommError(
                "ObservationNorm loc/scale differ across ranks: compute them with "
                "gpusim.collectors.init_stats_distributed (every rank) or load the same values on every rank"
            )

    def update_policy_weights_(self, policy_or_weights: Any = None) -> None:
        """Copies ``policy_or_weights`` (if given, as :meth:`Collector.update_policy_weights_`)
        into the policy, then broadcasts rank 0's weights to every rank (one collective per
        dtype; every rank must call it).

        Raises:
            CommError: the broadcast failed (a peer died or stalled).

        Examples:
            (one rank; under ``torchrun`` every rank runs the same lines)

            >>> import torch.distributed as dist
            >>> import gpusim as gs
            >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64,
            ...     num_envs=8, create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
            >>> collector.update_policy_weights_()  # rank 0's weights on every rank
            >>> collector.next().shape
            torch.Size([8, 4])
            >>> collector.shutdown(); dist.destroy_process_group()
        """
        self.collector.update_policy_weights_(policy_or_weights)
        with torch.no_grad():
            self.comm.broadcast_(self._weights(), "policy weight broadcast")

    def sync_stats(self) -> None:
        """All-reduces the ``VecNorm`` statistics added since the last call, with a batch counter
        that checks that every rank is at the same batch (the collector calls it after every
        batch; one collective, run even without statistics so that a dead peer is noticed at
        the next batch).

        Raises:
            CommError: the collective failed, or the ranks are at different batches.

        Examples:
            (one rank; under ``torchrun`` every rank runs the same lines)

            >>> import torch.distributed as dist
            >>> import gpusim as gs
            >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64,
            ...     num_envs=8, create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
            >>> _ = collector.next()  # iterating calls it after every batch
            >>> collector.sync_stats()  # one more all-reduce: every rank must make it too
            >>> collector.frames
            32
            >>> collector.shutdown(); dist.destroy_process_group()
        """
        self._batches += 1
        beat = torch.tensor([float(self._batches)], dtype=torch.float64)
        self._stats.sync(self.collector.steps_per_batch, extra=[beat])
        if self.world_size > 1 and int(beat.item()) != self._batches * self.world_size:
            raise CommError(
                f"rank {self.rank}: the ranks are at different batches (this rank finished batch {self._batches}, "
                f"the ranks' batch counts sum to {int(beat.item())}): every rank must iterate the collector in step"
            )

    def episode_stats(self) -> dict[str, torch.Tensor]:
        """The episodes that ended in the last batch on every rank (rank order):
        ``{"returns", "lengths"}`` as :meth:`Collector.episode_stats` (two collectives; every rank
        must call it).

        Examples:
            (one rank; under ``torchrun`` every rank runs the same lines)

            >>> import torch.distributed as dist
            >>> import gpusim as gs
            >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64,
            ...     num_envs=8, create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
            >>> _ = collector.next()
            >>> stats = collector.episode_stats()
            >>> sorted(stats), stats["returns"].shape == stats["lengths"].shape
            (['lengths', 'returns'], True)
            >>> collector.shutdown(); dist.destroy_process_group()
        """
        local = self.collector.episode_stats()
        rows = torch.stack([local["returns"].to(torch.float64), local["lengths"].to(torch.float64)], 1).cpu()
        counts = self.comm.all_gather(torch.tensor([rows.shape[0]]), "episode statistics (counts)")
        n = int(max(int(c) for c in counts))
        padded = torch.zeros(n, 2, dtype=torch.float64)
        padded[: rows.shape[0]] = rows
        parts = self.comm.all_gather(padded, "episode statistics")
        table = torch.cat([p[: int(c)] for p, c in zip(parts, counts)])
        device = local["returns"].device
        return {
            "returns": table[:, 0].to(local["returns"].dtype).to(device),
            "lengths": table[:, 1].to(local["lengths"].dtype).to(device),
        }

    def _gather(self, data: TensorDictBase) -> TensorDictBase | None:
        keys, leaves = zip(*data.items(True, True))
        flat, groups = pack(leaves)
        bufs = {dtype: self.comm.gather(buf, f"gather of the batch ({dtype})") for dtype, buf in flat.items()}
        if self.rank != 0:
            return None
        parts = []
        for r in range(self.world_size):
            td = data.copy()
            out = [torch.empty_like(t) for t in leaves]
            unpack_({dtype: b[r] for dtype, b in bufs.items()}, groups, out)
            for key, t in zip(keys, out):
                td.set(key, t)
            parts.append(td)
        return torch.cat(parts, 0)

    # ------------------------------------------------------------------ collection
    def rollout(self) -> TensorDictBase | None:
        """Collects one batch on every rank, syncs the statistics and returns this rank's batch
        (with ``gather``: all the ranks' batch on rank 0, None elsewhere).

        Raises:
            CommError: a collective failed (a peer died or stalled).

        Examples:
            (one rank; under ``torchrun`` every rank runs the same lines)

            >>> import torch.distributed as dist
            >>> import gpusim as gs
            >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64,
            ...     num_envs=8, create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
            >>> collector.rollout().shape  # this rank's [8 // world_size, 4] batch
            torch.Size([8, 4])
            >>> collector.shutdown(); dist.destroy_process_group()
        """
        data = self.collector.rollout()
        self.sync_stats()
        ids = ("collector", "traj_ids")
        if self.collector.track_traj_ids:
            data.set(ids, data.get(ids) * self.world_size + self.rank)
        if self.gather:
            data = self._gather(data)
        self._frames += self.frames_per_batch
        if data is None:
            return None
        if self.split_trajs:
            data = split_trajectories(data, len(self.env.batch_size))
        if self.postproc is not None:
            data = self.postproc(data)
        return data

    def __iter__(self) -> Iterator[TensorDictBase | None]:
        """Yields :meth:`rollout` until ``total_frames`` (all the ranks' frames) are collected
        (also ``collector.iterator()``, TorchRL's name).

        Examples:
            (one rank; under ``torchrun`` every rank runs the same lines)

            >>> import torch.distributed as dist
            >>> import gpusim as gs
            >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64,
            ...     num_envs=8, create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
            >>> [data.shape for data in collector.iterator()]
            [torch.Size([8, 4]), torch.Size([8, 4])]
            >>> collector.shutdown(); dist.destroy_process_group()
        """
        while self.total_frames < 0 or self._frames < self.total_frames:
            yield self.rollout()

    iterator = __iter__

    def next(self) -> TensorDictBase | None:
        """The next batch (TorchRL's ``collector.next()``).

        Raises:
            StopIteration: ``total_frames`` were collected.

        Examples:
            (one rank; under ``torchrun`` every rank runs the same lines)

            >>> import torch.distributed as dist
            >>> import gpusim as gs
            >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64,
            ...     num_envs=8, create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
            >>> collector.next().shape, collector.next().shape
            (torch.Size([8, 4]), torch.Size([8, 4]))
            >>> collector.next()
            Traceback (most recent call last):
            ...
            StopIteration: the collector has collected its total_frames (64)
            >>> collector.shutdown(); dist.destroy_process_group()
        """
        if 0 < self.total_frames <= self._frames:
            raise StopIteration(f"the collector has collected its total_frames ({self.total_frames})")
        return self.rollout()

    def set_seed(self, seed: int, static_seed: bool = False) -> int:
        """Seeds this rank's env with ``seed + rank * n_local`` (see the module docstring);
        returns what the env's ``set_seed`` returns. Local (no collective).

        Examples:
            (one rank; under ``torchrun`` every rank runs the same lines)

            >>> import torch.distributed as dist
            >>> import gpusim as gs
            >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64,
            ...     num_envs=8, create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
            >>> isinstance(collector.set_seed(3), int)  # rank r seeds with 3 + r * 8
            True
            >>> collector.shutdown(); dist.destroy_process_group()
        """
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        n_local = max(1, self.env.batch_size.numel())
        return self.collector.set_seed(seed + self.rank * n_local, static_seed=static_seed)

    def shutdown(self, close_env: bool = True) -> None:
        """Shuts the rank's collector down; destroys the process group if this collector made it.

        Examples:
            (one rank; under ``torchrun`` every rank runs the same lines)

            >>> import torch.distributed as dist
            >>> import gpusim as gs
            >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            >>> collector = DistributedSyncDataCollector(gs.make, frames_per_batch=32, total_frames=64,
            ...     num_envs=8, create_env_kwargs={"env_id": "CartPole-v1"}, seed=0)
            >>> collector.shutdown()  # closes this rank's env (the group stays)
            >>> collector.env.is_closed
            True
            >>> dist.destroy_process_group()
        """
        self.collector.shutdown(close_env=close_env)
        if self._owns_group and dist.is_initialized():
            if self.comm.world_size > 1:  # the ranks tear the group down together
                with self.comm.guard("barrier before destroying the process group"):
                    dist.barrier(group=self.comm.group)
            dist.destroy_process_group()
            self._owns_group = False

    def __repr__(self) -> str:
        return (
            f"DistributedSyncDataCollector(rank={self.rank}, world_size={self.world_size}, "
            f"backend={self.comm.backend!r}, env={type(self.env).__name__}, local_batch_size={list(self.env.batch_size)}, "
            f"frames_per_batch={self.frames_per_batch}, total_frames={self.total_frames}, gather={self.gather})"
        )
