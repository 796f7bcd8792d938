"""ParallelEnv: worker processes, shared buffers, configuration, failure modes and cleanup."""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import time

import pytest
import torch

from gpusim.envs._seeding import next_seed
from gpusim.envs.batched import EnvCreator, ParallelEnv, SerialEnv, WorkerError, WorkerTimeoutError
from gpusim.envs.checks import check_env_specs
from gpusim.envs.libs.gym import GymEnv
from gpusim.envs.native import CartPoleEnv, PendulumEnv
from gpusim.transforms import StepCounter, TransformedEnv
from tests.envs.batched._envs import (
    FailingEnv,
    MethodEnv,
    counting_env_with_shared_counter,
    counting_lambda,
    fds,
    pid_alive,
)
from tests.envs.toy_envs import CountingEnv, NestedCountingEnv

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="Linux process checks")


class ResetCountingEnv(MethodEnv):
    """Counts the calls of its ``_reset`` (read through worker attribute access)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.reset_calls = 0

    def _reset(self, td):
        self.reset_calls += 1
        return super()._reset(td)


@pytest.fixture(scope="module")
def counting_parallel():
    env = ParallelEnv(2, ResetCountingEnv)
    yield env
    env.close()


def _assert_no_workers(pids):
    assert pids, "the env had workers"
    children = {p.pid for p in mp.active_children()}
    assert not children & set(pids)
    assert not any(pid_alive(pid) for pid in pids)


# ---------------------------------------------------------------------------- behaviour
@pytest.mark.parametrize(
    "factory",
    [
        lambda: NestedCountingEnv(batch_size=[2]),
        lambda: CartPoleEnv(batch_size=[3]),
        lambda: GymEnv("CartPole-v1"),
    ],
    ids=["nested", "cartpole-native", "gym-cartpole"],
)
def test_check_env_specs_and_serial_parity(factory):
    parallel, serial = ParallelEnv(2, factory), SerialEnv(2, factory)
    try:
        assert parallel.output_spec == serial.output_spec
        check_env_specs(parallel)
        rollouts = []
        for env in (parallel, serial):
            env.set_seed(11)
            torch.manual_seed(0)
            rollouts.append(env.rollout(30, break_when_any_done=False))
        assert (rollouts[0] == rollouts[1]).all()
        assert rollouts[0]["next", "done"].any()  # auto-resets happened inside
    finally:
        parallel.close()


def test_partial_reset_only_resets_the_selected_workers(counting_parallel):
    env = counting_parallel
    td = env.reset()
    before = env.reset_calls
    td["count"] = torch.full((2, 1), 10.0)
    td["_reset"] = torch.tensor([[True], [False]])
    out = env.reset(td)
    assert env.reset_calls == [before[0] + 1, before[1]]
    assert out["count"][1].item() == 10.0 and out["count"][0].item() < 3
    check_env_specs(env)


def test_seeds_chained_and_reproducible(counting_parallel):
    env = counting_parallel
    assert env.set_seed(3) == next_seed(next_seed(3))

    def rollout():
        env.set_seed(3)
        torch.manual_seed(0)
        return env.rollout(15, break_when_any_done=False)

    assert (rollout() == rollout()).all()
    serial = SerialEnv(2, ResetCountingEnv)
    serial.set_seed(3)
    torch.manual_seed(0)
    assert (serial.rollout(15, break_when_any_done=False) == rollout()).all()


def test_attribute_and_method_access(counting_parallel):
    env = counting_parallel
    assert env.max_count == [5, 5]
    assert env.scaled(3.0, offset=1.0) == [16.0, 16.0]
    with pytest.raises(AttributeError, match="no_such"):
        env.no_such_attribute
    assert env.is_started  # a missing attribute does not break the workers
    assert env.label == ["method-env", "method-env"]


def test_mixed_envs_transforms_and_lambdas():
    env = ParallelEnv(2, [lambda: PendulumEnv(g=1.0), lambda: PendulumEnv(g=3.0)])
    try:
        assert env.g == [1.0, 3.0]
        check_env_specs(env)
    finally:
        env.close()
    with pytest.raises(ValueError, match="worker 1 differs"):
        ParallelEnv(2, [PendulumEnv, lambda: TransformedEnv(PendulumEnv(), StepCounter(2))])
    inside = ParallelEnv(2, EnvCreator(lambda: TransformedEnv(CountingEnv(max_count=100), StepCounter(2))))
    try:
        td = inside.rollout(5, break_when_any_done=False)
        assert td["next", "step_count"][:, :, 0].tolist() == [[1, 2, 1, 2, 1]] * 2
    finally:
        inside.close()


def test_configure_parallel_and_start_methods(monkeypatch):
    env = ParallelEnv(2, CountingEnv)
    assert env.configure_parallel(num_sub_threads=2, mp_start_method="fork") is env
    with pytest.raises(ValueError, match="mp_start_method"):
        env.configure_parallel(mp_start_method="teleport")
    with pytest.raises(ValueError, match="memmap"):
        env.configure_parallel(memmap=True)
    with pytest.raises(ValueError, match="shared_memory"):  # buffers the workers cannot see
        ParallelEnv(2, CountingEnv, shared_memory=False, use_buffers=True)
    env.reset()
    try:
        with pytest.raises(RuntimeError, match="before the ParallelEnv starts"):
            env.configure_parallel(num_sub_threads=1)
    finally:
        env.close()
    env.configure_parallel(num_sub_threads=1)  # allowed again once closed
    # never fork once CUDA is initialised
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    with pytest.raises(RuntimeError, match="fork"):
        ParallelEnv(2, CountingEnv, mp_start_method="fork")
    defaulted = ParallelEnv(2, CountingEnv)
    with pytest.warns(RuntimeWarning, match="spawn"):
        assert defaulted._start_method() == "spawn"


def test_bad_timeout_variable(monkeypatch):
    monkeypatch.setenv("BATCHED_PIPE_TIMEOUT", "soon")
    env = ParallelEnv(2, CountingEnv)
    with pytest.raises(ValueError, match="BATCHED_PIPE_TIMEOUT"):
        env.reset()
    assert not env.is_started


# ---------------------------------------------------------------------------- failures
@pytest.mark.parametrize("mode", ["raise", "exit", "hang"])
def test_worker_failure_raises_and_cleans_up(mode, monkeypatch):
    monkeypatch.setenv("BATCHED_PIPE_TIMEOUT", "5")  # "hang" sleeps 60 s in the step
    gc.collect()
    baseline = fds()
    env = ParallelEnv(2, [CountingEnv, lambda: FailingEnv(mode=mode)])
    env.reset()
    pids = env.worker_pids
    expected = {"raise": WorkerError, "exit": WorkerError, "hang": WorkerTimeoutError}[mode]
    with pytest.raises(expected, match="worker 1") as info:  # ("hang": raised before its 60 s end)
        env.rollout(10, break_when_any_done=False)
    if mode == "raise":
        assert info.value.remote_type == "ValueError"
        assert "boom at step 2" in str(info.value) and "Worker traceback" in str(info.value)
        assert isinstance(info.value.__cause__, ValueError)
    elif mode == "exit":
        assert "died (exit code 3)" in str(info.value)
    else:
        assert "BATCHED_PIPE_TIMEOUT" in str(info.value)
    del info
    assert not env.is_started
    _assert_no_workers(pids)
    assert fds() == baseline  # pipes and shared-memory segments released
    # the env restarts fresh on next use
    assert env.reset()["count"].shape == torch.Size([2, 1])
    env.close()
    assert fds() == baseline


def test_worker_failure_during_construction():
    before = {p.pid for p in mp.active_children()}
    env = ParallelEnv(2, [CountingEnv, lambda: FailingEnv(mode="raise")])
    # a factory that fails in the worker only (the metadata env was built fine)
    env.create_env_fn[1] = lambda: (_ for _ in ()).throw(RuntimeError("no env for you"))
    with pytest.raises(WorkerError, match="no env for you"):
        env.reset()
    assert not env.is_started
    assert {p.pid for p in mp.active_children()} <= before


def test_close_releases_everything_and_is_idempotent():
    gc.collect()
    baseline = fds()
    env = ParallelEnv(2, CountingEnv)
    env.rollout(3)
    pids = env.worker_pids
    assert all(pid_alive(pid) for pid in pids)
    env.close()
    env.close()
    _assert_no_workers(pids)
    assert fds() == baseline
    mine = f"_{os.getpid()}_"  # torch names its segments torch_<pid>_...
    assert not [name for name in os.listdir("/dev/shm") if mine in name]


def test_garbage_collection_stops_the_workers():
    env = ParallelEnv(2, CountingEnv)
    env.reset()
    pids = env.worker_pids
    del env
    gc.collect()
    _assert_no_workers(pids)


def _orphan_parent(conn, method):
    env = ParallelEnv(2, CountingEnv, mp_start_method=method)
    env.reset()
    conn.send(env.worker_pids)
    os._exit(0)  # no cleanup at all: the workers must notice and exit by themselves


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_idle_workers_stay_up_with_every_start_method(method):
    """A worker checks for its main process when idle; under forkserver its parent is the
    forkserver, which must not read as a dead main process (it once did: the workers exited
    after one idle second)."""
    from gpusim.envs.batched._worker import _IDLE_CHECK_S

    env = ParallelEnv(2, CountingEnv, mp_start_method=method)
    try:
        td = env.reset()
        pids = env.worker_pids
        time.sleep(2.5 * _IDLE_CHECK_S)
        assert all(pid_alive(pid) for pid in pids)
        out = env.rand_step(td)
        assert out["next", "done"].shape == (2, 1)
    finally:
        env.close()


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_workers_exit_when_the_main_process_dies(method):
    # the dying main process is spawned for forkserver: a forked one would inherit (and hang
    # on) this process's forkserver, started by an earlier test
    ctx = mp.get_context("fork" if method == "fork" else "spawn")
    parent_conn, child_conn = ctx.Pipe()
    proc = ctx.Process(target=_orphan_parent, args=(child_conn, method))
    proc.start()
    assert parent_conn.poll(540)  # (a hang guard: a spawned parent imports torch, slow under load)
    pids = parent_conn.recv()
    proc.join(60)
    deadline = time.monotonic() + 120  # the workers look for their main process once per idle second
    while any(pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(pid_alive(pid) for pid in pids)


# ---------------------------------------------------------------------------- spawn
def test_spawn_with_env_creator_and_a_lambda():
    """Worker 0 comes from an EnvCreator with shared state, worker 1 from a module-level
    lambda (pickled by value): both travel to spawned processes."""
    creator = EnvCreator(counting_env_with_shared_counter)
    (state,) = creator.shared_state.values()
    env = ParallelEnv(2, [creator, counting_lambda], mp_start_method="spawn")
    try:
        assert env.max_count == [5, 4]
        env.rollout(4, break_when_any_done=False)
        assert state["calls"].item() == 4  # worker 0 counted into the main process's tensor
    finally:
        env.close()
