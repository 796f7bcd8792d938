"""The rollout buffer cache: reuse only of dropped buffers, the free-memory cap, fork safety."""

from __future__ import annotations

import multiprocessing as mp
import pickle
import sys

import pytest
import torch

from gpusim.envs import _rollout_cache
from gpusim.envs._rollout_cache import (
    MIN_CACHED_BYTES,
    RolloutBufferCache,
    clear_rollout_cache,
    rollout_cache_info,
    rollout_empty,
)
from gpusim.envs.native import CartPoleEnv

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="anonymous private maps are POSIX")

MB = 1 << 20


def test_reuses_only_dropped_buffers():
    cache = RolloutBufferCache(64 * MB)
    a = cache.empty((MB,), torch.float32)  # 4 MB
    b = cache.empty((MB,), torch.float32)
    assert a.data_ptr() != b.data_ptr()
    view = a[10:20]  # a view keeps the buffer in use
    ptr = a.data_ptr()
    del a
    c = cache.empty((MB,), torch.float32)
    assert c.data_ptr() not in (ptr, b.data_ptr())
    del view
    d = cache.empty((MB,), torch.float32)
    assert d.data_ptr() == ptr
    info = cache.info()
    assert info["buffers"] == 3 and info["free_buffers"] == 0


def test_values_dtypes_and_shapes_are_plain_tensors():
    cache = RolloutBufferCache(64 * MB)
    for dtype in (torch.bool, torch.uint8, torch.int64, torch.float32, torch.float64):
        x = cache.empty((1000, 300, 3), dtype)
        assert x.shape == (1000, 300, 3) and x.dtype == dtype and x.is_contiguous() and x.device.type == "cpu"
        x.fill_(1)
        assert bool((x == 1).all())
        assert torch.equal(pickle.loads(pickle.dumps(x)), x)
        shared = x.clone().share_memory_()
        assert shared.is_shared() and torch.equal(shared, x)


def test_sizes_match_within_a_factor_two_and_small_requests_bypass():
    cache = RolloutBufferCache(256 * MB)
    big = cache.empty((16 * MB,), torch.uint8)
    ptr = big.data_ptr()
    del big
    small = cache.empty((4 * MB,), torch.uint8)  # a free 16 MB buffer is not spent on 4 MB
    assert small.data_ptr() != ptr
    tiny = cache.empty((MIN_CACHED_BYTES // 2,), torch.uint8)
    assert cache.info()["buffers"] == 2 and tiny.numel() == MIN_CACHED_BYTES // 2


def test_free_memory_is_capped_oldest_first():
    cache = RolloutBufferCache(8 * MB)
    bufs = [cache.empty((4 * MB,), torch.uint8) for _ in range(4)]
    del bufs
    keep = cache.empty((MB,), torch.float32)  # the next allocation trims the free buffers
    info = cache.info()
    assert info["free_bytes"] <= 8 * MB and info["buffers"] == 3 and keep.numel() == MB
    cache.clear()
    assert cache.info()["free_bytes"] == 0


def test_disabled_cache_is_torch_empty():
    cache = RolloutBufferCache(0)
    x = cache.empty((4 * MB,), torch.uint8)
    assert x.numel() == 4 * MB and cache.info()["buffers"] == 0


def test_env_var_sets_the_cap(monkeypatch):
    monkeypatch.setenv("GPUSIM_ROLLOUT_CACHE_MB", "12")
    assert _rollout_cache._default_cap_bytes() == 12 * MB
    monkeypatch.setenv("GPUSIM_ROLLOUT_CACHE_MB", "lots")
    with pytest.raises(ValueError, match="GPUSIM_ROLLOUT_CACHE_MB must be a number of MB, got 'lots'"):
        _rollout_cache._default_cap_bytes()


def test_default_cap_follows_a_container_memory_limit(monkeypatch, tmp_path):
    limit = tmp_path / "memory.max"
    limit.write_text("2147483648\n")  # a 2 GiB container
    monkeypatch.delenv("GPUSIM_ROLLOUT_CACHE_MB", raising=False)
    monkeypatch.setattr(_rollout_cache, "_CGROUP_LIMITS", (str(limit),))
    assert _rollout_cache._default_cap_bytes() == (2 << 30) // 8
    limit.write_text("max\n")  # no limit: physical memory
    assert _rollout_cache._default_cap_bytes() >= min(4096 * MB, (2 << 30) // 8)


def _child_writes(q):
    y = rollout_empty((4 * MB,), torch.uint8)  # reuses the buffer the parent dropped
    y.numpy().fill(7)  # numpy: torch's OpenMP pool is not usable after fork
    q.put(y.data_ptr())


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork")
def test_buffers_are_private_across_fork():
    # only x's buffer free once x is dropped: free buffers of the same size left by earlier
    # tests of this process would otherwise serve the child or z first (best fit, in list order)
    clear_rollout_cache()
    x = rollout_empty((4 * MB,), torch.uint8)
    x.fill_(1)
    ptr = x.data_ptr()
    del x
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_writes, args=(q,))
    p.start()
    child_ptr = q.get(timeout=300)  # (hang guards)
    p.join(300)
    assert p.exitcode == 0 and child_ptr == ptr  # the child reused the same (copy-on-write) map
    z = rollout_empty((4 * MB,), torch.uint8)
    assert z.data_ptr() == ptr and bool((z == 1).all())  # the child's writes never reach us


def test_repeated_rollouts_reuse_output_memory():
    env = CartPoleEnv(batch_size=[20_000], seed=0)
    out = env.rollout(40, break_when_any_done=False)
    ptrs = {k: out.get(k).data_ptr() for k in out.keys(True, True)}
    ref = {k: out.get(k).clone() for k in out.keys(True, True)}
    env.set_seed(0)
    again = env.rollout(40, break_when_any_done=False)  # the first output is still alive
    assert not set(ptrs.values()) & {again.get(k).data_ptr() for k in again.keys(True, True)}
    assert all(torch.equal(out.get(k), ref[k]) for k in ref)  # and untouched
    del out, again
    before = rollout_cache_info()["free_buffers"]
    third = env.rollout(40, break_when_any_done=False)
    assert rollout_cache_info()["free_buffers"] < before  # served from the dropped buffers
    assert third.batch_size == (20_000, 40)


@pytest.mark.parametrize("shape, dtype", [((MIN_CACHED_BYTES - 1,), torch.uint8), ((MIN_CACHED_BYTES,), torch.uint8),
                                          ((65536, 4), torch.float32), ((65535, 4), torch.float32)])  # fmt: skip
def test_backend_at_the_threshold(shape, dtype):
    """From ``threshold("rollout_cache")`` bytes the cache serves the request (the "cpu" backend),
    below it ``torch.empty`` does (the reference); both are plain contiguous CPU tensors."""
    from gpusim.kernels import force_backend, record_backends, threshold

    assert MIN_CACHED_BYTES == threshold("rollout_cache")
    cache = RolloutBufferCache(64 * MB)
    nbytes = torch.Size(shape).numel() * dtype.itemsize
    cached = nbytes >= MIN_CACHED_BYTES
    with record_backends() as calls:
        x = cache.empty(shape, dtype)
    assert calls == [("rollout_cache", "cpu" if cached else "reference")]
    assert cache.info()["buffers"] == int(cached)
    assert x.shape == shape and x.dtype == dtype and x.is_contiguous() and x.device.type == "cpu"
    x.copy_(torch.arange(x.numel()).reshape(shape).to(dtype))
    assert torch.equal(x, torch.arange(x.numel()).reshape(shape).to(dtype))
    with force_backend("reference"):  # forcing the reference bypasses the cache
        assert cache.empty(shape, dtype).shape == shape and cache.info()["buffers"] == int(cached)
