"""ParallelEnv error reporting: an exception raised inside a worker reaches the main process
with its type, message and worker traceback, at the failing call, for every start method;
a worker killed by a signal is reported with the signal, and the other workers are stopped."""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import signal
import time

import pytest

from gpusim.envs.batched import ParallelEnv, WorkerError
from gpusim.envs.batched.parallel import describe_exit
from tests.envs.batched._envs import MethodEnv, fds, pid_alive
from tests.envs.toy_envs import CountingEnv

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="Linux process checks")


def _in_worker() -> bool:
    return mp.current_process().name != "MainProcess"


def worker_only_failing_factory() -> CountingEnv:
    """Builds fine in the main process (metadata), raises in a worker."""
    if _in_worker():
        raise ValueError("no env in a worker")
    return CountingEnv()


def slow_factory() -> CountingEnv:
    """Takes a minute to build in a worker (stopped by the failure of another worker), then
    writes the file ``$SLOW_FACTORY_DONE`` names, if any."""
    if _in_worker():
        time.sleep(60)
        if os.environ.get("SLOW_FACTORY_DONE"):
            with open(os.environ["SLOW_FACTORY_DONE"], "w"):
                pass
    return CountingEnv()


class WorkerOnlyFailingEnv(MethodEnv):
    """Raises ``ValueError("boom in <where>")`` in ``where`` (``"step"``, ``"reset"``,
    ``"set_seed"``, ``"property"``, ``"method"``), only in a worker process and only once the
    worker started (the metadata env of the main process works)."""

    def __init__(self, where: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.where = where

    def _boom(self, where: str) -> None:
        if where == self.where and _in_worker():
            raise ValueError(f"boom in {where}")

    def _step(self, td):
        self._boom("step")
        return super()._step(td)

    def _reset(self, td):
        self._boom("reset")
        return super()._reset(td)

    def _set_seed(self, seed):
        self._boom("set_seed")
        return super()._set_seed(seed)

    @property
    def fragile(self) -> int:
        self._boom("property")
        return 1

    def scaled(self, x: float, offset: float = 0.0) -> float:
        self._boom("method")
        return super().scaled(x, offset)

    @property
    def unreadable(self) -> Unpicklable:
        return Unpicklable()


class SelfKillingEnv(CountingEnv):
    """A ``CountingEnv`` whose worker SIGKILLs itself on its first step (as the OOM killer would)."""

    def _step(self, td):
        if _in_worker():
            os.kill(os.getpid(), signal.SIGKILL)
        return super()._step(td)


def _explode():
    raise ValueError("cannot be unpickled here")


class Unpicklable:
    """Pickles fine, but unpickling it raises (a method argument the worker cannot read)."""

    def __reduce__(self):
        return _explode, ()


def _children() -> set[int]:
    return {p.pid for p in mp.active_children()}


def _assert_stopped(env: ParallelEnv, pids: list[int]) -> None:
    assert not env.is_started
    assert pids and not _children() & set(pids)
    assert not any(pid_alive(pid) for pid in pids)


# ---------------------------------------------------------------------------- creation
def test_create_failure_in_the_worker_is_reported_every_time():
    """The race this guards: a worker that fails to create its env sends its error and exits;
    its exit (or closed pipe) must never be reported instead of the error it sent."""
    gc.collect()
    baseline, before = fds(), _children()
    for attempt in range(10):
        env = ParallelEnv(2, worker_only_failing_factory, mp_start_method="fork")
        with pytest.raises(WorkerError) as info:
            env.reset()
        err = info.value
        message = str(err)
        assert isinstance(err, RuntimeError)
        assert err.remote_type == "ValueError", (attempt, message)
        assert "failed while creating its env: ValueError: no env in a worker" in message
        assert "Worker traceback:" in message and "in worker_only_failing_factory" in message
        assert err.remote_traceback.rstrip().endswith("ValueError: no env in a worker")
        assert isinstance(err.__cause__, ValueError)
        del info, err
        assert not env.is_started
        env.close()
    assert _children() <= before
    assert fds() == baseline


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_create_failure_is_reported_with_every_start_method(method):
    if method not in mp.get_all_start_methods():
        pytest.skip(f"{method} is not available")
    before = _children()
    env = ParallelEnv(2, [CountingEnv, worker_only_failing_factory], mp_start_method=method)
    expected = "worker 1 .* failed while creating its env: ValueError"
    with pytest.raises(WorkerError, match=expected) as info:
        env.reset()
    assert info.value.worker == 1
    assert "in worker_only_failing_factory" in str(info.value)
    assert not env.is_started
    assert _children() <= before
    env.close()


def test_create_failure_does_not_wait_for_the_other_workers(tmp_path, monkeypatch):
    """Worker 0 takes a minute to build its env: worker 1's error is raised while worker 0 is
    still building (its minute, counted inside the worker, has not ended: no marker file)."""
    done = tmp_path / "slow-factory-done"
    monkeypatch.setenv("SLOW_FACTORY_DONE", str(done))  # (inherited by the forked workers)
    before = _children()
    env = ParallelEnv(2, [slow_factory, worker_only_failing_factory], mp_start_method="fork")
    with pytest.raises(WorkerError, match="worker 1 .* ValueError: no env in a worker"):
        env.reset()
    assert not done.exists(), "the error waited for worker 0 to build its env"
    assert _children() <= before
    env.close()


# ---------------------------------------------------------------------------- later calls
_CALLS = {
    "step": (lambda env: env.rollout(3, break_when_any_done=False), "step"),
    "reset": (lambda env: env.reset(), "reset"),
    "set_seed": (lambda env: env.set_seed(3), "set_seed"),
    "property": (lambda env: env.fragile, "getattr('fragile')"),
    "method": (lambda env: env.scaled(2.0), "scaled()"),
}


@pytest.mark.parametrize("where", list(_CALLS))
def test_errors_after_start_carry_the_worker_exception(where):
    gc.collect()
    baseline = fds()
    factories = [lambda: WorkerOnlyFailingEnv("nowhere"), lambda: WorkerOnlyFailingEnv(where)]
    env = ParallelEnv(2, factories, mp_start_method="fork")
    env.start()
    pids = env.worker_pids
    call, command = _CALLS[where]
    with pytest.raises(WorkerError) as info:
        call(env)
    message = str(info.value)
    assert info.value.worker == 1 and info.value.remote_type == "ValueError"
    assert f"worker 1 (pid {pids[1]}) failed during {command!r}: ValueError: boom in {where}" in message
    assert "Worker traceback:" in message and "in _boom" in message
    assert isinstance(info.value.__cause__, ValueError)
    del info
    _assert_stopped(env, pids)
    assert fds() == baseline
    env.close()


def test_a_command_the_worker_cannot_read_is_reported():
    env = ParallelEnv(2, MethodEnv, mp_start_method="fork")
    env.start()
    pids = env.worker_pids
    expected = "failed during 'scaled\\(\\)': ValueError: cannot be unpickled here"
    with pytest.raises(WorkerError, match=expected) as info:
        env.scaled(Unpicklable())
    assert "in _explode" in str(info.value)
    del info
    _assert_stopped(env, pids)
    env.close()


# ---------------------------------------------------------------------------- killed workers
def test_describe_exit():
    assert describe_exit(0) == "exit code 0"
    assert describe_exit(-signal.SIGTERM).startswith("killed by signal SIGTERM, exit code -15")
    assert "OOM" in describe_exit(-signal.SIGKILL)
    assert describe_exit(-200) == "killed by signal 200, exit code -200"


@pytest.mark.parametrize("when", ["idle", "mid-step"])
def test_a_killed_worker_is_reported_with_its_signal(when, monkeypatch):
    monkeypatch.setenv("BATCHED_PIPE_TIMEOUT", "20")  # a hang would fail the test, not block it
    gc.collect()
    baseline = fds()
    factory = CountingEnv if when == "idle" else SelfKillingEnv
    env = ParallelEnv(2, [CountingEnv, factory], mp_start_method="fork")
    td = env.reset()
    pids = env.worker_pids
    if when == "idle":
        os.kill(pids[1], signal.SIGKILL)
        env._procs[1].join(60)  # dead before the next call (the path is then always the same)
    with pytest.raises(WorkerError) as info:  # (not the BATCHED_PIPE_TIMEOUT error: "died" below)
        env.rand_step(td)
    message = str(info.value)
    assert info.value.worker == 1 and info.value.remote_type is None
    assert f"worker 1 (pid {pids[1]}) died (killed by signal SIGKILL, exit code -9" in message
    assert "during 'step'" in message
    del info
    _assert_stopped(env, pids)  # worker 0 was stopped too
    assert fds() == baseline
    env.reset()  # the env restarts fresh
    assert env.worker_pids and not set(env.worker_pids) & set(pids)
    env.close()
    assert fds() == baseline


def test_an_answer_the_main_process_cannot_read_is_reported():
    env = ParallelEnv(2, lambda: WorkerOnlyFailingEnv("nowhere"), mp_start_method="fork")
    env.start()
    pids = env.worker_pids
    expected = "answered \"getattr\\('unreadable'\\)\" with a value that cannot be unpickled"
    with pytest.raises(WorkerError, match=expected) as info:
        env.unreadable
    assert isinstance(info.value.__cause__, ValueError)
    del info
    _assert_stopped(env, pids)
    env.close()
