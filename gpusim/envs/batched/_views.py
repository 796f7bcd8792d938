"""Indexed views of a batched env: ``env[1:3]`` is an env of the same class over some of the
workers of ``env`` (no new worker): stepping or resetting the view steps or resets those workers.

A view keeps its parent alive. Closing a view does not stop the workers; a closed view, or a
view whose parent was closed, raises when used. Workers are selected by int, slice, sequence,
NumPy array or integer tensor (boolean masks are rejected: select the workers explicitly).

Examples:
    >>> from gpusim import SerialEnv, PendulumEnv
    >>> env = SerialEnv(4, PendulumEnv)
    >>> view = env[1:3]
    >>> view.batch_size, view.num_workers
    (torch.Size([2]), 2)
    >>> view.rollout(2).shape
    torch.Size([2, 2])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from gpusim.envs.common import EnvBase
from gpusim.envs.episode import AutoResetMode, ResetMasks

if TYPE_CHECKING:
    from gpusim.envs.batched.base import BatchedEnvBase

__all__ = ["worker_indices", "make_view", "check_usable", "to_parent"]

#: The settings a view copies from its parent.
_SETTINGS = (
    "meta_data",
    "_worker_device",
    "_plan",
    "pin_memory",
    "non_blocking",
    "num_threads",
    "num_sub_threads",
    "_use_buffers",
    "shared_memory",
    "memmap",
    "share_individual_td",
    "consolidate",
    "serial_for_single",
    "_batch_locked",
)


def worker_indices(index: Any, num_workers: int) -> list[int]:
    """The worker indices selected by ``index`` (int, slice, sequence, array or tensor).

    Raises:
        NotImplementedError: a boolean mask.
        IndexError: an index out of range.
        TypeError: an index of another type.
    """
    if isinstance(index, (np.ndarray, torch.Tensor)) and index.dtype in (np.bool_, torch.bool):
        raise NotImplementedError("Boolean masks are not supported to index a batched env: pass worker indices")
    if isinstance(index, (list, tuple)) and index and all(isinstance(i, bool) for i in index):
        raise NotImplementedError("Boolean masks are not supported to index a batched env: pass worker indices")
    if isinstance(index, slice):
        return list(range(num_workers))[index]
    if isinstance(index, (np.ndarray, torch.Tensor)):
        index = index.tolist()
    if isinstance(index, (int, np.integer)):
        index = [int(index)]
    if not isinstance(index, (list, tuple)):
        raise TypeError(f"a batched env is indexed by worker indices, got {type(index).__name__}")
    out = []
    for i in index:
        i = int(i)
        if not -num_workers <= i < num_workers:
            raise IndexError(f"worker index {i} out of range for {num_workers} workers")
        out.append(i % num_workers)
    return out


def make_view(env: BatchedEnvBase, indices: list[int]) -> BatchedEnvBase:
    """An env of ``type(env)`` over the workers ``indices`` of ``env`` (composed with ``env``'s
    own selection when ``env`` is a view)."""
    parent = env.__dict__.get("_view_parent")
    if parent is not None:
        indices = [env.__dict__["_view_indices"][i] for i in indices]
        env = parent
    view = type(env).__new__(type(env))
    d = view.__dict__
    for name in _SETTINGS:
        d[name] = env.__dict__[name]
    d["num_workers"] = len(indices)
    d["create_env_fn"] = [env.create_env_fn[i] for i in indices]
    d["create_env_kwargs"] = [env.create_env_kwargs[i] for i in indices]
    d["_view_parent"] = env
    d["_view_indices"] = list(indices)
    d["_started"] = False
    d["_nontensor_cache"] = {}
    d["_last_outputs"] = {}
    batch = torch.Size((len(indices), *env.meta_data.batch_size))
    EnvBase.__init__(view, device=env.device, batch_size=batch, auto_reset_mode=AutoResetMode.SPARSE)
    expanded = env.meta_data.expand(batch)
    view.input_spec = expanded.input_spec.to(env.device)
    view.output_spec = expanded.output_spec.to(env.device)
    view.__dict__["_batch_locked"] = env.batch_locked
    view._post_init()
    return view


def check_usable(view: BatchedEnvBase) -> BatchedEnvBase:
    """The parent of ``view``, started; raises if the view or its parent was closed."""
    if view.__dict__.get("_closed"):
        raise RuntimeError(f"this {type(view).__name__} is a closed indexed env: index its parent again")
    parent = view.__dict__["_view_parent"]
    if parent.__dict__.get("_closed"):  # closed by close() (not merely not started yet)
        raise RuntimeError(f"the parent environment has been closed: this indexed {type(view).__name__} is unusable")
    parent._ensure_started()
    return parent


def to_parent(view: BatchedEnvBase, tensordict: TensorDictBase | None, masks: ResetMasks | None = None):
    """The parent-batch tensordict holding ``tensordict``'s rows at the view's workers (zeros
    elsewhere), and the parent's reset masks selecting the view's rows (``masks`` given)."""
    parent = view.__dict__["_view_parent"]
    indices = view.__dict__["_view_indices"]
    full = TensorDict({}, batch_size=parent.batch_size, device=parent.device)
    if tensordict is not None:
        for key, value in tensordict.items(True, True):
            target = torch.zeros((*parent.batch_size, *value.shape[1:]), dtype=value.dtype, device=value.device)
            target[indices] = value
            full.set(key, target)
    if masks is None:
        return full, None
    rows = masks.env_rows()
    selected = torch.zeros(parent.batch_size, dtype=torch.bool, device=parent.device)
    selected[indices] = True if rows is None else rows.to(parent.device)
    for key in parent.reset_keys:
        full.pop(key, None)
    level = parent.done_levels[0]  # root first: a root mask selects every level's rows
    shape = parent.full_done_spec[level.keys[0]].shape
    mask = selected.reshape(*selected.shape, *([1] * (len(shape) - selected.ndim))).expand(shape)
    full.set(level.reset_key, mask.clone())
    return full, parent.episode.resolve(full, True)
