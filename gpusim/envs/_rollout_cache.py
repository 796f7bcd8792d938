"""A cache of large CPU buffers for rollout outputs, so repeated rollouts reuse faulted-in memory.

A rollout at a large batch ends by writing every step into fresh ``[*batch, T, ...]`` tensors of
hundreds of MB. On the CPU, the first write to fresh memory costs a page fault per page, and on
a virtual machine that cost varies from run to run by 3x or more (the same 320 MB stack takes
70 to 250 ms here). Data collection runs rollouts in a loop and drops each output once it is
consumed. This cache keeps the memory of dropped outputs and hands it to the next rollout
(already backed by pages), the way PyTorch's CUDA caching allocator keeps device memory.

* Each buffer is an anonymous private memory map (copy-on-write across ``fork``) wrapped with
  ``torch.frombuffer``. Transparent huge pages are requested (``madvise``) where Linux allows.
* A buffer is free again when no tensor uses it any more. Each allocation hands
  ``torch.frombuffer`` a fresh ``memoryview`` of the map, which the tensor's storage keeps
  alive, and the cache keeps only a weak reference to it; the cache never tracks tensors.
* At most ``GPUSIM_ROLLOUT_CACHE_MB`` MB (default: 1/8 of physical memory or of the container's memory limit, at most 4096) of
  free buffers are kept: at each allocation, the oldest free buffers beyond that are released
  to the OS (buffers dropped since the last allocation wait for the next one).
  ``GPUSIM_ROLLOUT_CACHE_MB=0`` disables the cache (plain ``torch.empty``), and
  :func:`clear_rollout_cache` releases every free buffer.

Whether a request is served from the cache is chosen by :func:`gpusim.kernels._dispatch.select`
(table key ``"rollout_cache"``: from a threshold on the bytes); smaller requests, and forcing the reference
backend, give plain ``torch.empty`` tensors.

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
import threading
import weakref
from collections.abc import Sequence

import torch

from gpusim.kernels._dispatch import select, threshold

__all__ = ["rollout_empty", "clear_rollout_cache", "rollout_cache_info", "RolloutBufferCache"]

_ALIGN = 2 << 20  # buffer sizes are whole huge pages
MIN_CACHED_BYTES = threshold("rollout_cache")
"""Smaller outputs are plain ``torch.empty`` tensors (``BACKEND_TABLE["rollout_cache"]``)."""
_CPU = torch.device("cpu")


def _default_cap_bytes() -> int:
    env = os.environ.get("GPUSIM_ROLLOUT_CACHE_MB")
    if env is not None:
        try:
            return max(0, int(float(env) * (1 << 20)))
        except ValueError:
            raise ValueError(f"GPUSIM_ROLLOUT_CACHE_MB must be a number of MB, got {env!r}") from None
    return min(4096 << 20, _memory_bytes() // 8)


_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def _memory_bytes() -> int:
    """Physical memory, or the container's memory limit (cgroup v2 or v1) when lower."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30
    for path in _CGROUP_LIMITS:
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


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
        # [map, weak reference to the memoryview the tensors of the current use hold (or None)]
        self._entries: list[list] = []
        self._lock = threading.Lock()
        self._usable = self.max_free_bytes > 0 and hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MAP_ANONYMOUS")

    @staticmethod
    def _is_free(entry: list) -> bool:
        ref = entry[1]
        return ref is None or ref() is None

    def _take(self, nbytes: int) -> list:
        """A free entry of ``nbytes`` (rounded) up to twice that, else a new one (lock held)."""
        best = None
        for entry in self._entries:
            size = len(entry[0])
            if nbytes <= size <= 2 * nbytes and self._is_free(entry) and (best is None or size < len(best[0])):
                best = entry
        if best is not None:
            self._entries.remove(best)
            self._entries.append(best)  # most recently used last
            return best
        m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            try:
                m.madvise(mmap.MADV_HUGEPAGE)
            except OSError:  # THP disabled: plain pages
                pass
        entry = [m, None]
        self._entries.append(entry)
        return entry

    def _trim(self) -> None:
        """Releases the oldest free maps beyond ``max_free_bytes`` (lock held)."""
        excess = sum(len(e[0]) for e in self._entries if self._is_free(e)) - self.max_free_bytes
        kept = []
        for entry in self._entries:  # oldest first
            if excess > 0 and self._is_free(entry):
                excess -= len(entry[0])
                continue
            kept.append(entry)
        self._entries = kept

    def empty(self, shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
        """An uninitialised contiguous CPU tensor, from a cached buffer when
        :func:`~gpusim.kernels._dispatch.select` picks the ``"cpu"`` backend (from ``MIN_CACHED_BYTES``).

        Args:
            shape: the tensor shape.
            dtype: the tensor dtype.

        Returns:
            A contiguous CPU tensor (``torch.empty`` for small sizes, when caching is off or
            when the reference backend is forced).

        Examples:
            >>> cache = RolloutBufferCache(8 << 20)
            >>> _ = cache.empty((MIN_CACHED_BYTES,), torch.uint8)  # from a cached buffer
            >>> _ = cache.empty((16,), torch.uint8)  # small: torch.empty
            >>> cache.info()["buffers"]
            1
        """
        shape = torch.Size(shape)
        nbytes = shape.numel() * dtype.itemsize
        if not self._usable or nbytes == 0 or select("rollout_cache", _CPU, nbytes) != "cpu":
            return torch.empty(shape, dtype=dtype)
        rounded = -(-nbytes // _ALIGN) * _ALIGN
        with self._lock:
            entry = self._take(rounded)
            view = memoryview(entry[0])  # held by the tensor's storage for as long as it lives
            entry[1] = weakref.ref(view)
            self._trim()
        return torch.frombuffer(view, dtype=torch.uint8, count=nbytes).view(dtype).view(shape)

    def clear(self) -> None:
        """Releases every free buffer to the OS (buffers still in use stay)."""
        with self._lock:
            self._entries = [e for e in self._entries if not self._is_free(e)]

    def info(self) -> dict:
        """``{"buffers", "free_buffers", "bytes", "free_bytes", "max_free_bytes"}``."""
        with self._lock:
            free = [e for e in self._entries if self._is_free(e)]
            return {
                "buffers": len(self._entries),
                "free_buffers": len(free),
                "bytes": sum(len(e[0]) for e in self._entries),
                "free_bytes": sum(len(e[0]) for e in free),
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
