"""A cache of large CPU buffers for rollout outputs, so repeated rollouts reuse faulted-in memory.

A rollout at a large batch ends by writing every step into fresh ``[*batch, T, ...]`` tensors of
hundreds of MB. On the CPU, the first write to fresh memory costs a page fault per page, and on
a virtual machine that cost varies from run to run by 3x or more (the same 320 MB stack takes
70 to 250 ms here). Data collection runs rollouts in a loop and drops each output once it is
consumed. This cache keeps the memory of dropped outputs and hands it to the next rollout
(already backed by pages), the way PyTorch's CUDA caching allocator keeps device memory.

* Each buffer is an anonymous private memory map (copy-on-write across ``fork``) wrapped with
  ``torch.frombuffer``. Transparent huge pages are requested (``madvise``) where Linux allows.
* A buffer is free again when no tensor uses it any more. The cache then holds the only
  reference to the map, which is checked with ``sys.getrefcount``; the cache never tracks
  tensors.
* At most ``GPUSIM_ROLLOUT_CACHE_MB`` MB (default: 1/8 of physical memory, at most 4096) of
  free buffers are kept: at each allocation, the oldest free buffers beyond that are released
  to the OS (buffers dropped since the last allocation wait for the next one).
  ``GPUSIM_ROLLOUT_CACHE_MB=0`` disables the cache (plain ``torch.empty``), and
  :func:`clear_rollout_cache` releases every free buffer.

The tensors are ordinary CPU tensors. The only difference: their storage cannot grow
(``resize_`` to a larger size raises), like any ``torch.frombuffer`` tensor.

Examples:
    >>> import torch
    >>> x = rollout_empty((1024, 1024), torch.float32)
    >>> x.shape, x.dtype
    (torch.Size([1024, 1024]), torch.float32)
"""

from __future__ import annotations

import mmap
import os
import sys
import threading
from collections.abc import Sequence

import torch

__all__ = ["rollout_empty", "clear_rollout_cache", "rollout_cache_info", "RolloutBufferCache"]

_ALIGN = 2 << 20  # buffer sizes are whole huge pages
MIN_CACHED_BYTES = 1 << 20
"""Smaller outputs are plain ``torch.empty`` tensors."""


def _default_cap_bytes() -> int:
    env = os.environ.get("GPUSIM_ROLLOUT_CACHE_MB")
    if env is not None:
        try:
            return max(0, int(float(env) * (1 << 20)))
        except ValueError:
            raise ValueError(f"GPUSIM_ROLLOUT_CACHE_MB must be a number of MB, got {env!r}") from None
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30
    return min(4096 << 20, total // 8)


class RolloutBufferCache:
    """Reusable anonymous memory maps for large CPU rollout outputs.

    Args:
        max_free_bytes: the most memory kept in free buffers (``0``: no caching).

    Examples:
        >>> cache = RolloutBufferCache(64 << 20)
        >>> a = cache.empty((256, 1024), torch.float32)
        >>> ptr = a.data_ptr()
        >>> del a
        >>> cache.empty((256, 1024), torch.float32).data_ptr() == ptr  # the freed buffer again
        True
    """

    def __init__(self, max_free_bytes: int) -> None:
        self.max_free_bytes = int(max_free_bytes)
        self._maps: list[mmap.mmap] = []
        self._lock = threading.Lock()
        self._usable = self.max_free_bytes > 0 and hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MAP_ANONYMOUS")

    def _is_free(self, i: int) -> bool:
        # referenced by the list and by getrefcount's argument only: no tensor holds the map
        return sys.getrefcount(self._maps[i]) <= 2

    def _take(self, nbytes: int) -> mmap.mmap:
        """A free map of ``nbytes`` (rounded) up to twice that, else a new one (lock held)."""
        best = None
        for i in range(len(self._maps)):
            size = len(self._maps[i])
            if nbytes <= size <= 2 * nbytes and self._is_free(i) and (best is None or size < len(self._maps[best])):
                best = i
        if best is not None:
            m = self._maps.pop(best)
            self._maps.append(m)  # most recently used last
            return m
        m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            try:
                m.madvise(mmap.MADV_HUGEPAGE)
            except OSError:  # THP disabled: plain pages
                pass
        self._maps.append(m)
        return m

    def _trim(self) -> None:
        """Releases the oldest free maps beyond ``max_free_bytes`` (lock held)."""
        free = [i for i in range(len(self._maps)) if self._is_free(i)]
        excess = sum(len(self._maps[i]) for i in free) - self.max_free_bytes
        for i in free:  # oldest first
            if excess <= 0:
                break
            excess -= len(self._maps[i])
            self._maps[i] = None  # type: ignore[call-overload]
        self._maps = [m for m in self._maps if m is not None]

    def empty(self, shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
        """An uninitialised contiguous CPU tensor, from a cached buffer when large enough.

        Args:
            shape: the tensor shape.
            dtype: the tensor dtype.

        Returns:
            A contiguous CPU tensor (``torch.empty`` for small sizes or when caching is off).
        """
        shape = torch.Size(shape)
        nbytes = shape.numel() * dtype.itemsize
        if not self._usable or nbytes < MIN_CACHED_BYTES:
            return torch.empty(shape, dtype=dtype)
        rounded = -(-nbytes // _ALIGN) * _ALIGN
        with self._lock:
            m = self._take(rounded)
            self._trim()
        return torch.frombuffer(m, dtype=torch.uint8, count=nbytes).view(dtype).view(shape)

    def clear(self) -> None:
        """Releases every free buffer to the OS (buffers still in use stay)."""
        with self._lock:
            self._maps = [self._maps[i] for i in range(len(self._maps)) if not self._is_free(i)]

    def info(self) -> dict:
        """``{"buffers", "free_buffers", "bytes", "free_bytes", "max_free_bytes"}``."""
        with self._lock:
            free = [i for i in range(len(self._maps)) if self._is_free(i)]
            return {
                "buffers": len(self._maps),
                "free_buffers": len(free),
                "bytes": sum(len(m) for m in self._maps),
                "free_bytes": sum(len(self._maps[i]) for i in free),
                "max_free_bytes": self.max_free_bytes,
            }


_CACHE = RolloutBufferCache(_default_cap_bytes())


def rollout_empty(shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised CPU tensor for rollout output, from the process-wide buffer cache.

    Examples:
        >>> rollout_empty((2, 3), torch.int64).shape
        torch.Size([2, 3])
    """
    return _CACHE.empty(shape, dtype)


def clear_rollout_cache() -> None:
    """Releases the free rollout buffers kept by gpusim to the OS.

    Examples:
        >>> clear_rollout_cache()
    """
    _CACHE.clear()


def rollout_cache_info() -> dict:
    """Sizes of the process-wide rollout buffer cache (see :class:`RolloutBufferCache`).

    Examples:
        >>> sorted(rollout_cache_info())
        ['buffers', 'bytes', 'free_buffers', 'free_bytes', 'max_free_bytes']
    """
    return _CACHE.info()
