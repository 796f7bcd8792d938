"""Per-batch bookkeeping of a collector, computed once per batch from the ``[*B, T]`` data with
tensor ops (no host read): trajectory ids, and the returns and lengths of the episodes that
ended in the batch, with per-row running sums carried from one batch to the next.

Both collector engines (eager and compiled) produce the same raw data and share this code, so
their bookkeeping is identical.

Examples:
    >>> import torch
    >>> tracker = EpisodeTracker(torch.Size([1]), torch.device("cpu"))
    >>> reward = torch.ones(1, 4)
    >>> ended = torch.tensor([[False, True, False, False]])
    >>> tracker.update(reward, ended)
    >>> tracker.returns(), tracker.lengths()
    (tensor([2.]), tensor([2]))
    >>> tracker.update(reward, torch.tensor([[True, False, False, False]]))
    >>> tracker.returns(), tracker.lengths()   # the episode that spanned both batches
    (tensor([3.]), tensor([3]))
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from gpusim.envs._keys import NestedKey

__all__ = ["EpisodeTracker", "TrajIds", "ended_rows", "step_reward", "split_trajectories"]


def ended_rows(data: TensorDictBase, done_keys: list[NestedKey], batch_dims: int) -> torch.Tensor:
    """``[*B, T]`` bool: the steps on which a row's trajectory ended (any done entry of any
    level set, as ``step_and_maybe_reset`` resets it)."""
    shape = data.batch_size[: batch_dims + 1]
    flags = None
    for key in done_keys:
        value = data.get(("next", *((key,) if isinstance(key, str) else key)))
        value = value.reshape(*shape, -1).any(-1)
        flags = value if flags is None else flags | value
    return flags


def step_reward(data: TensorDictBase, reward_keys: list[NestedKey], batch_dims: int) -> torch.Tensor:
    """``[*B, T]`` float: each row's reward of each step, the mean of its reward entries (over
    agents and groups: a single-agent env's reward as it is)."""
    shape = data.batch_size[: batch_dims + 1]
    total = None
    for key in reward_keys:
        value = data.get(("next", *((key,) if isinstance(key, str) else key)))
        value = value.reshape(*shape, -1).float().mean(-1)
        total = value if total is None else total + value
    return total / len(reward_keys)


def _prev_done(ended: torch.Tensor) -> torch.Tensor:
    """``[N, T]`` long: the index of the last step before ``t`` on which the row ended (``-1``:
    none in this batch)."""
    N, T = ended.shape
    idx = torch.where(ended, torch.arange(T, device=ended.device).expand(N, T), -1)
    last = torch.cummax(idx, dim=1).values
    return torch.cat([torch.full((N, 1), -1, dtype=last.dtype, device=last.device), last[:, :-1]], dim=1)


class EpisodeTracker:
    """Running returns and lengths per env row, carried across batches.

    Args:
        batch_size: the env batch dims.
        device: where the sums live.
    """

    def __init__(self, batch_size: torch.Size, device: torch.device) -> None:
        self.batch_size = torch.Size(batch_size)
        n = max(1, self.batch_size.numel())
        self._ret = torch.zeros(n, dtype=torch.float64, device=device)
        self._len = torch.zeros(n, dtype=torch.long, device=device)
        self._at: tuple | None = None

    def reset(self) -> None:
        """Starts every row's episode afresh (after a full reset)."""
        self._ret.zero_()
        self._len.zero_()

    def update(self, reward: torch.Tensor, ended: torch.Tensor) -> None:
        """Takes one batch: ``reward`` and ``ended`` are ``[*B, T]``."""
        T = reward.shape[-1]
        r = reward.reshape(-1, T).to(torch.float64)
        d = ended.reshape(-1, T)
        cs = torch.cumsum(r, dim=1) + self._ret[:, None]
        prev = _prev_done(d)
        base = torch.where(
            prev >= 0, torch.gather(cs, 1, prev.clamp(min=0)), torch.zeros((), dtype=cs.dtype, device=cs.device)
        )
        ret_at = cs - base
        steps = torch.arange(T, device=d.device).expand_as(prev)
        len_at = steps - prev + torch.where(prev >= 0, 0, self._len[:, None])
        self._at = (ret_at, len_at, d)
        # the episodes still running at the end of the batch
        self._ret = torch.where(d[:, -1], 0.0, ret_at[:, -1])
        self._len = torch.where(d[:, -1], 0, len_at[:, -1])

    def returns(self) -> torch.Tensor:
        """The returns of the episodes that ended in the last batch (row-major, then time)."""
        if self._at is None:
            return torch.zeros(0)
        ret_at, _, d = self._at
        return ret_at[d].float()

    def lengths(self) -> torch.Tensor:
        """The lengths (steps) of the episodes that ended in the last batch."""
        if self._at is None:
            return torch.zeros(0, dtype=torch.long)
        _, len_at, d = self._at
        return len_at[d]


class TrajIds:
    """Trajectory ids (TorchRL's ``("collector", "traj_ids")``): unique per trajectory, the same
    for the steps of one trajectory across batches, new after every end.

    Args:
        batch_size: the env batch dims.
        device: where the ids live.
    """

    def __init__(self, batch_size: torch.Size, device: torch.device) -> None:
        n = max(1, torch.Size(batch_size).numel())
        self._n = n
        self._current = torch.arange(n, device=device)
        self._next = torch.tensor(n, device=device)

    def restart(self) -> None:
        """Gives every row a new trajectory (after a full reset)."""
        self._current = self._next + torch.arange(self._n, device=self._current.device)
        self._next = self._next + self._n

    def update(self, ended: torch.Tensor) -> torch.Tensor:
        """The ``[*B, T]`` ids of one batch whose ends are ``ended``."""
        shape = ended.shape
        d = ended.reshape(self._n, -1).long()
        before = torch.cumsum(d, dim=1) - d
        total = d.sum(1)
        offset = torch.cumsum(total, 0) - total
        fresh = self._next + offset[:, None] + before - 1
        ids = torch.where(before == 0, self._current[:, None], fresh)
        self._current = torch.where(total > 0, self._next + offset + total - 1, self._current)
        self._next = self._next + total.sum()
        return ids.reshape(shape)


def split_trajectories(data: TensorDictBase, batch_dims: int) -> TensorDictBase:
    """Pads the trajectories of a ``[*B, T]`` batch into ``[n_traj, max_len]`` (TorchRL's
    ``split_trajs=True`` layout): zeros after each trajectory's end and a
    ``("collector", "mask")`` entry marking the valid steps. Reads the sizes on the host.
    """
    flat = data.reshape(-1) if batch_dims + 1 > 1 else data
    ids = flat.get(("collector", "traj_ids"))
    change = torch.ones_like(ids, dtype=torch.bool)
    change[1:] = ids[1:] != ids[:-1]
    seg = torch.cumsum(change.long(), 0) - 1
    starts = torch.nonzero(change).squeeze(-1)
    pos = torch.arange(ids.numel(), device=ids.device) - starts[seg]
    n_seg = int(starts.numel())
    counts = torch.diff(torch.cat([starts, torch.tensor([ids.numel()], device=ids.device)]))
    max_len = int(counts.max())

    def pad(x: torch.Tensor) -> torch.Tensor:
        out = torch.zeros((n_seg, max_len, *x.shape[1:]), dtype=x.dtype, device=x.device)
        out[seg, pos] = x
        return out

    out = flat.apply(pad, batch_size=[n_seg, max_len])
    mask = torch.zeros((n_seg, max_len), dtype=torch.bool, device=ids.device)
    mask[seg, pos] = True
    out.set(("collector", "mask"), mask)
    return out
