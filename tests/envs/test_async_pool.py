"""Async env pools: the synchronous env interface, async send/recv with ``min_get``/``max_get``/
``timeout``, per-env traffic, backends and exchanges (kept small: real threads and processes)."""

from __future__ import annotations

from functools import partial

import pytest
import torch

import gpusim as gs
from gpusim import PendulumEnv


@pytest.fixture(params=[("threading", "queue"), ("multiprocessing", "shm")], ids=lambda p: "-".join(p))
def pool(request):
    backend, exchange = request.param
    env = gs.AsyncEnvPool([partial(PendulumEnv, g=9.0 + i) for i in range(3)], backend=backend, exchange=exchange)
    yield env
    env.close()


def test_backend_choice(pool):
    expected = gs.ThreadingAsyncEnvPool if pool.backend == "threading" else gs.ProcessorAsyncEnvPool
    assert type(pool) is expected and pool.batch_size == (3,) and pool.num_envs == 3
    with pytest.raises(ValueError, match="backend"):
        gs.AsyncEnvPool([PendulumEnv], backend="asyncio")
    with pytest.raises(ValueError, match="shm"):
        gs.AsyncEnvPool([PendulumEnv], backend="threading", exchange="shm")


def test_synchronous_interface(pool):
    r = pool.reset()
    assert r["env_index"] == [0, 1, 2] and r["observation"].shape == (3, 3)
    pool.check_env_specs(break_when_any_done="both")
    env = gs.TransformedEnv(pool, gs.StepCounter())
    out = env.rollout(3, break_when_any_done=False)
    assert out["next", "step_count"][:, -1].flatten().tolist() == [3, 3, 3]


def test_async_send_recv(pool):
    pool.async_reset_send(env_index=[2, 0, 1])
    first = pool.async_reset_recv(min_get=1, max_get=1, timeout=0.0)
    rest = pool.async_reset_recv(min_get=2, max_get=2, timeout=5.0)
    assert first.shape == (1,) and rest.shape == (2,)
    assert sorted([*first["env_index"], *rest["env_index"]]) == [0, 1, 2]
    rest["action"] = torch.zeros(2, 1)
    pool.async_step_send(rest)  # the rows name their envs
    out = pool.async_step_recv(min_get=2)
    assert out["env_index"] == sorted(rest["env_index"]) and out["next", "reward"].shape == (2, 1)
    with pytest.raises(ValueError, match="max_get"):
        pool.async_reset_recv(min_get=2, max_get=1)
    with pytest.raises(RuntimeError, match="pending"):
        pool.async_step_recv(min_get=1)


def test_per_env_traffic_and_busy_envs(pool):
    td = pool.reset()
    one = td[1].exclude("env_index").set("action", torch.zeros(1))
    pool.async_step_and_maybe_reset_send(one, env_index=1)
    stepped, nxt = pool.async_step_and_maybe_reset_recv(env_index=1)
    assert stepped["env_index"] == 1 and "next" in stepped.keys() and "next" not in nxt.keys()
    pool.async_step_send(td.set("action", torch.zeros(3, 1)))
    with pytest.raises(RuntimeError, match="busy"):
        pool.async_step_send(td)
    pool.async_step_recv(min_get=3)


def test_worker_errors_are_raised(pool):
    td = pool.reset().set("action", torch.zeros(3, 2))  # wrong action shape: the envs raise
    pool.async_step_send(td)
    with pytest.raises(RuntimeError, match="expected"):
        pool.async_step_recv(min_get=3)
