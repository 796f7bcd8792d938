"""``ParallelEnv``: a batch of envs, one worker process each, exchanging data in shared memory.

The thin CPU fallback for envs that are not tensor programs (gymnasium): each worker runs its
env in its own process; actions are written by the main process into shared-memory buffers
allocated from the specs, observations are written there by the workers, and the main process
copies them out with one transfer per step (to the env device when it is not the CPU).

Failure modes are bounded: a worker that raises, dies or does not answer within
``BATCHED_PIPE_TIMEOUT`` seconds (environment variable, read when the workers start; default
10000) makes the call raise a :class:`WorkerError` in the main process; every worker is then
stopped, and the env restarts fresh on next use. The error names the worker and what it was
doing, and carries the worker's exception type, message and traceback (as ``__cause__`` too
when the exception unpickles here), or, for a worker that died, its exit code or signal.

Examples:
    >>> from gpusim.envs.batched import ParallelEnv
    >>> from gpusim.envs.native import CartPoleEnv
    >>> env = ParallelEnv(2, CartPoleEnv)
    >>> env.rollout(3, break_when_any_done=False).shape
    torch.Size([2, 3])
    >>> env.close()
"""

from __future__ import annotations

import multiprocessing as mp
import os
import select
import signal
import sys
import time
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

from gpusim.envs.batched import _worker
from gpusim.envs.batched._shared import Buffers
from gpusim.envs.batched.base import BatchedEnvBase, ConfigurationError
from gpusim.envs.batched.env_creator import EnvCreator
from gpusim.envs.common import EnvBase

__all__ = ["ParallelEnv", "WorkerError", "WorkerTimeoutError", "DEFAULT_PIPE_TIMEOUT", "describe_exit"]

DEFAULT_PIPE_TIMEOUT = 10000.0
_START_TIMEOUT = 120.0
_CLOSE_TIMEOUT = 5.0


class WorkerError(RuntimeError):
    """A ``ParallelEnv`` worker raised, died or timed out.

    Attributes:
        worker: the index of the failing worker.
        remote_type: the name of the exception type raised in the worker (``None`` if it died).
        remote_traceback: the worker-side traceback (``None`` if it died).

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> class Broken(CartPoleEnv):
        ...     def _step(self, td):
        ...         raise ValueError("the simulator crashed")
        >>> env = ParallelEnv(2, [CartPoleEnv, Broken])  # worker 1 fails
        >>> try:
        ...     env.rand_step()
        ... except WorkerError as err:
        ...     print(err.worker, err.remote_type, env.is_started)  # every worker was stopped
        1 ValueError False
    """

    def __init__(
        self, message: str, worker: int, remote_type: str | None = None, remote_traceback: str | None = None
    ) -> None:
        super().__init__(message)
        self.worker = worker
        self.remote_type = remote_type
        self.remote_traceback = remote_traceback


class WorkerTimeoutError(WorkerError, TimeoutError):
    """A ``ParallelEnv`` worker did not answer within ``BATCHED_PIPE_TIMEOUT`` seconds.

    Examples:
        >>> issubclass(WorkerTimeoutError, WorkerError), issubclass(WorkerTimeoutError, TimeoutError)
        (True, True)
        >>> err = WorkerTimeoutError("worker 1 did not answer", worker=1)
        >>> err.worker, err.remote_type
        (1, None)
    """


def _read_timeout() -> float:
    raw = os.environ.get("BATCHED_PIPE_TIMEOUT")
    if raw is None or raw == "":
        return DEFAULT_PIPE_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"BATCHED_PIPE_TIMEOUT must be a number of seconds, got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"BATCHED_PIPE_TIMEOUT must be positive, got {raw!r}")
    return value


def describe_exit(exitcode: int | None) -> str:
    """Describes a worker's exit status (``Process.exitcode``) for an error message.

    Examples:
        >>> describe_exit(3)
        'exit code 3'
        >>> describe_exit(-9)
        'killed by signal SIGKILL, exit code -9; the kernel OOM killer sends SIGKILL'
        >>> describe_exit(None)
        'still running'
    """
    if exitcode is None:
        return "still running"
    if exitcode >= 0:
        return f"exit code {exitcode}"
    try:
        name = signal.Signals(-exitcode).name
    except ValueError:
        name = f"signal {-exitcode}"
    else:
        name = f"signal {name}"
    hint = "; the kernel OOM killer sends SIGKILL" if -exitcode == signal.SIGKILL else ""
    return f"killed by {name}, exit code {exitcode}{hint}"


def _during(command: str) -> str:
    return "while creating its env" if command == "start" else f"during {command!r}"


def _keeps_running(answer: tuple, command: str) -> bool:
    """Whether an error answer leaves the env usable: only a missing worker attribute does
    (``hasattr``/``getattr`` with a default), so the other workers' answers are still read."""
    return answer[2] == "AttributeError" and command.startswith("getattr")


def _default_start_method() -> str:
    return "fork" if sys.platform.startswith("linux") else "spawn"


def _stop_processes(procs: list, conns: list, graceful: bool, timeout: float = _CLOSE_TIMEOUT) -> None:
    """Stops worker processes: a close command first when ``graceful``, then SIGTERM, SIGKILL.

    Never raises; safe to call twice (the finalizer of a ``ParallelEnv`` runs it).
    """
    if graceful:
        payload = _worker.encode(("close",))
        for proc, conn in zip(procs, conns):
            if proc.is_alive():
                try:
                    conn.send_bytes(payload)
                except (OSError, ValueError):
                    pass
        deadline = time.monotonic() + timeout
        for proc in procs:
            proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(1.0)
        if proc.is_alive():
            proc.kill()
            proc.join(1.0)
    for conn in conns:
        try:
            conn.close()
        except OSError:
            pass
    for proc in procs:
        try:
            proc.close()
        except ValueError:
            pass
    procs.clear()
    conns.clear()


def _check_start_method(method: str) -> None:
    if method not in mp.get_all_start_methods():
        raise ValueError(f"mp_start_method must be one of {mp.get_all_start_methods()}, got {method!r}")
    if method == "fork" and torch.cuda.is_initialized():
        raise RuntimeError("mp_start_method='fork' is unsafe once CUDA is initialised in this process; use 'spawn'")


#: ParallelEnv arguments a SerialEnv does not take (dropped by ``serial_for_single``).
_PARALLEL_ONLY = ("mp_start_method", "daemon", "shutdown_timeout")


class ParallelEnv(BatchedEnvBase):
    """Runs ``num_workers`` envs in worker processes, as one env of batch
    ``[num_workers, *sub_batch]``.

    Arguments are those of :class:`~gpusim.envs.batched.base.BatchedEnvBase`, plus:

    Keyword Args:
        mp_start_method: ``"fork"`` (default on Linux), ``"spawn"`` (default elsewhere) or
            ``"forkserver"``. Fork is never used once CUDA is initialised: a defaulted fork falls
            back to spawn (with a warning), an explicit one raises. Spawned workers receive
            their factory pickled (cloudpickle: lambdas are fine).
        daemon: start the workers as daemon processes (they then cannot start processes
            themselves; the workers are stopped at interpreter exit either way).
        shutdown_timeout: seconds a worker gets to close its env and exit on :meth:`close`
            before it is terminated, then killed.

    Buffers (``use_buffers``): shared memory (default) or memory-mapped files (``memmap=True,
    shared_memory=False``); with neither, the data travels through the pipes (no buffers).

    The workers start on first use (or :meth:`start`); :meth:`configure_parallel` changes
    their settings before that. :meth:`close` stops them and releases the shared memory; the
    env is also cleaned up when garbage collected and at interpreter exit.

    Examples:
        >>> from gpusim.envs.native import PendulumEnv
        >>> env = ParallelEnv(2, PendulumEnv, {"g": 9.81})
        >>> env.g
        [9.81, 9.81]
        >>> env.close()
    """

    @classmethod
    def _redirect_construction(cls, args: tuple, kwargs: dict) -> EnvBase | None:
        """``ParallelEnv(1, ..., serial_for_single=True)`` builds a :class:`SerialEnv`."""
        if cls is not ParallelEnv or not kwargs.get("serial_for_single", False):
            return None
        num_workers = args[0] if args else kwargs.get("num_workers")
        if num_workers != 1:
            return None
        from gpusim.envs.batched.serial import SerialEnv

        serial_kwargs = {k: v for k, v in kwargs.items() if k not in _PARALLEL_ONLY}
        return SerialEnv(*args, **serial_kwargs)

    def __init__(
        self,
        num_workers: int,
        create_env_fn: Callable[..., EnvBase] | Sequence[Callable[..., EnvBase]],
        create_env_kwargs: dict | Sequence[dict] | None = None,
        *,
        mp_start_method: str | None = None,
        daemon: bool = True,
        shutdown_timeout: float = _CLOSE_TIMEOUT,
        **kwargs: Any,
    ) -> None:
        if not isinstance(shutdown_timeout, (int, float)) or not shutdown_timeout >= 0:
            raise ValueError(f"shutdown_timeout must be a non-negative number of seconds, got {shutdown_timeout!r}")
        # set before the base class runs: metadata_from_workers starts the workers there
        d = self.__dict__
        d["_procs"], d["_conns"] = [], []
        d["_finalizer"] = d["_poller"] = d["_timeout"] = None
        d["mp_start_method"] = None
        d["daemon"] = bool(daemon)
        d["shutdown_timeout"] = float(shutdown_timeout)
        if mp_start_method is not None:
            _check_start_method(mp_start_method)
            d["mp_start_method"] = mp_start_method
        super().__init__(num_workers, create_env_fn, create_env_kwargs, **kwargs)
        if not (self.shared_memory or self.memmap):
            if kwargs.get("use_buffers"):
                raise ConfigurationError(
                    "ParallelEnv(use_buffers=True) needs buffers its workers can see: shared_memory=True or memmap=True"
                )
            self.__dict__["_use_buffers"] = False
        self.configure_parallel(mp_start_method=mp_start_method)
        if self.__dict__.get("_live_workers"):  # metadata_from_workers: they run already
            self.start()

    # ------------------------------------------------------------------ configuration
    def configure_parallel(
        self,
        *,
        mp_start_method: str | None = None,
        num_threads: int | None = None,
        num_sub_threads: int | None = None,
        non_blocking: bool | None = None,
        pin_memory: bool | None = None,
        shared_memory: bool | None = None,
        memmap: bool | None = None,
        use_buffers: bool | None = None,
    ) -> ParallelEnv:
        """Changes worker settings; only before the workers start.

        Keyword Args:
            mp_start_method: ``"fork"``, ``"spawn"`` or ``"forkserver"``.
            num_threads: torch threads of the main process once the workers start.
            num_sub_threads: torch threads of each worker.
            non_blocking: non-blocking device transfers.
            pin_memory: stage device transfers through pinned memory (CUDA only).
            shared_memory: must be ``True`` (the only mode).
            memmap: must be ``False`` (not supported).
            use_buffers: must be ``True`` (the only mode).

        Returns:
            ``self``.

        Raises:
            RuntimeError: when the workers are running (call :meth:`close` first).
            ValueError: for an unknown start method or an unsupported buffer mode.

        Examples:
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = ParallelEnv(2, CartPoleEnv).configure_parallel(num_sub_threads=1)
            >>> env.num_sub_threads
            1
            >>> _ = env.reset()
            >>> env.configure_parallel(num_sub_threads=2)  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            RuntimeError: configure_parallel must be called before the ParallelEnv starts ...
            >>> env.close()
        """
        if self._started:
            raise RuntimeError(
                "configure_parallel must be called before the ParallelEnv starts (first reset, "
                "step, seeding or attribute access); close() it first"
            )
        if mp_start_method is not None:
            _check_start_method(mp_start_method)
            self.__dict__["mp_start_method"] = mp_start_method
        if num_threads is not None:
            if not isinstance(num_threads, int) or num_threads < 1:
                raise ValueError(f"num_threads must be a positive int, got {num_threads!r}")
            self.__dict__["num_threads"] = num_threads
        if num_sub_threads is not None:
            if not isinstance(num_sub_threads, int) or num_sub_threads < 1:
                raise ValueError(f"num_sub_threads must be a positive int, got {num_sub_threads!r}")
            self.__dict__["num_sub_threads"] = num_sub_threads
        if non_blocking is not None:
            self.__dict__["non_blocking"] = bool(non_blocking)
        if pin_memory is not None:
            self.__dict__["pin_memory"] = bool(pin_memory)
        shared = self.shared_memory if shared_memory is None else bool(shared_memory)
        mapped = self.memmap if memmap is None else bool(memmap)
        if shared and mapped:
            raise ConfigurationError(
                "memmap and shared memory are mutually exclusive features: pass shared_memory=False with memmap=True"
            )
        self.__dict__["shared_memory"], self.__dict__["memmap"] = shared, mapped
        if use_buffers is not None:
            if use_buffers and not (shared or mapped):
                raise ConfigurationError(
                    "ParallelEnv(use_buffers=True) needs buffers its workers can see: shared_memory=True or memmap=True"
                )
            self.__dict__["_use_buffers"] = bool(use_buffers)
            if use_buffers and self.__dict__.get("_dynamic_specs", False):
                self._no_buffers_for_dynamic_specs(True)
        elif not (shared or mapped):
            self.__dict__["_use_buffers"] = False
        return self

    def _start_method(self) -> str:
        method = self.mp_start_method
        if method is None:
            method = _default_start_method()
            if method == "fork" and torch.cuda.is_initialized():
                warnings.warn(
                    "CUDA is initialised in this process: ParallelEnv starts its workers with "
                    "'spawn' instead of 'fork'",
                    RuntimeWarning,
                    stacklevel=4,
                )
                method = "spawn"
        elif method == "fork" and torch.cuda.is_initialized():
            raise RuntimeError(
                "ParallelEnv(mp_start_method='fork') cannot start: CUDA is initialised in this "
                "process, and forking it corrupts the GPU state of the children. Use 'spawn'."
            )
        return method

    # ------------------------------------------------------------------ lifecycle
    def _start_workers(self) -> None:
        if self.__dict__.pop("_live_workers", False):  # built by metadata_from_workers: send the plan
            workers = list(range(self.num_workers))
            self._send(workers, _worker.encode(("plan", self._plan)), "plan")
            self._gather(workers, "plan")
            self.__dict__["_exchange"] = None
            return
        buffers = None
        tds = None
        if self._use_buffers:
            buffers = Buffers.allocate(
                self._plan, self.meta_data, self.num_workers, share_memory=self.shared_memory, memmap=self.memmap
            )
            tds = buffers.for_worker()
        self._spawn(self.create_env_fn, self.create_env_kwargs, self._plan, tds, buffers)

    def _live_worker_metadata(self, fns: list, kwargs: list) -> list:
        self._spawn(fns, kwargs, None, None, None)  # the workers answer "start" with their metadata
        self.__dict__["_starting_live"] = True
        try:
            return self._gather_start()
        finally:
            self.__dict__["_starting_live"] = False

    def _stop_live_workers(self) -> None:
        self.__dict__.pop("_live_workers", None)
        self._shutdown_workers()  # a worker waiting for its plan closes its env on "close"

    def _gather_start(self) -> list:
        try:
            return self._gather(list(range(len(self._procs))), "start", max(self._timeout, _START_TIMEOUT))
        except BaseException:
            self._abort()
            raise

    def _spawn(self, fns: list, kwargs: list, plan: Any, tds: Any, buffers: Any) -> None:
        """Starts one process per factory; with a ``plan``, waits until every env is built."""
        timeout = _read_timeout()
        method = self._start_method()
        ctx = mp.get_context(method)
        procs: list = []
        conns: list = []
        d = self.__dict__
        d["_procs"], d["_conns"], d["_timeout"] = procs, conns, timeout
        # the finalizer holds the process list, not the env: it runs on garbage collection and
        # at interpreter exit
        d["_finalizer"] = weakref.finalize(self, _stop_processes, procs, conns, True, self.shutdown_timeout)
        try:
            for i, (fn, kw) in enumerate(zip(fns, kwargs)):
                parent_conn, child_conn = ctx.Pipe(duplex=True)
                factory = self._worker_factory(fn, kw, method)
                # a forked child inherits every parent end opened so far: it closes them
                inherited = [*conns, parent_conn] if method == "fork" else []
                proc = ctx.Process(
                    target=_worker.worker_main,
                    name=f"gpusim-ParallelEnv-worker-{i}",
                    args=(i, child_conn, factory, plan, tds, self.num_sub_threads, os.getpid(), inherited),
                    daemon=self.daemon,
                )
                proc.start()
                child_conn.close()
                procs.append(proc)
                conns.append(parent_conn)
            d["_exchange"] = buffers
            self._build_poller()
        except BaseException:
            self._abort()
            raise
        if plan is not None:
            self._note_observation_readers(self._gather_start())

    def _worker_factory(self, fn: Callable[..., EnvBase], kwargs: dict, method: str) -> Callable[[], EnvBase]:
        if method == "fork":
            return lambda: fn(**kwargs)
        if isinstance(fn, EnvCreator):
            return _CreatorCall(fn, kwargs)
        return _worker.PickledFactory(fn, kwargs)

    def _build_poller(self) -> None:
        fd_map = {}
        poller = None
        if hasattr(select, "poll"):
            poller = select.poll()
            for i, (conn, proc) in enumerate(zip(self._conns, self._procs)):
                poller.register(conn.fileno(), select.POLLIN)
                poller.register(proc.sentinel, select.POLLIN)
                fd_map[conn.fileno()] = ("conn", i)
                fd_map[proc.sentinel] = ("proc", i)
        self.__dict__["_poller"] = (poller, fd_map)

    def _shutdown_workers(self) -> None:
        finalizer = self.__dict__.get("_finalizer")
        if finalizer is not None:
            finalizer()  # graceful close, then terminate/kill; idempotent
        self.__dict__["_finalizer"] = None
        self.__dict__["_poller"] = None

    def _abort(self) -> None:
        """Stops every worker at once (after a failure) and forgets the buffers."""
        finalizer = self.__dict__.get("_finalizer")
        if finalizer is not None:
            finalizer.detach()
        # while metadata_from_workers starts them, the built envs are closed (they wait for a command)
        graceful = self.__dict__.get("_starting_live", False)
        _stop_processes(self._procs, self._conns, graceful=graceful, timeout=self.shutdown_timeout)
        d = self.__dict__
        d["_finalizer"] = None
        d["_poller"] = None
        d["_exchange"] = None
        d["_started"] = False
        d["_builder_cache"] = None
        d["_staging"] = {}

    # ------------------------------------------------------------------ messaging
    def _send(self, workers: Sequence[int], payload: bytes, command: str) -> None:
        conns = self._conns
        for i in workers:
            try:
                conns[i].send_bytes(payload)
            except (OSError, ValueError) as err:
                self._fail_dead(i, command, err)

    def _send_frame(self, workers: Sequence[int], framed: bytes, command: str) -> None:
        """Sends a hot one-byte command already framed (``_worker.frame``): one ``os.write``."""
        if self._poller[0] is None:  # pragma: no cover - Windows: the pipe ends are handles
            self._send(workers, framed[4:], command)
            return
        conns = self._conns
        for i in workers:
            try:
                os.write(conns[i].fileno(), framed)
            except (OSError, ValueError) as err:
                self._fail_dead(i, command, err)

    def _gather(self, workers: Sequence[int], command: str, timeout: float | None = None) -> list:
        """Waits for one answer from each of ``workers``; returns their values in order."""
        timeout = self._timeout if timeout is None else timeout
        conns, procs = self._conns, self._procs
        pending = set(workers)
        values: dict[int, Any] = {}
        deadline = time.monotonic() + timeout
        poller, fd_map = self._poller
        errors: list[tuple[int, tuple]] = []
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                i = min(pending)
                self._abort_and_raise(
                    WorkerTimeoutError(
                        f"ParallelEnv worker {i} did not answer {command!r} within {timeout:g} s "
                        f"(BATCHED_PIPE_TIMEOUT); all workers were stopped",
                        i,
                    )
                )
            if poller is not None:
                try:
                    events = poller.poll(remaining * 1000.0)
                except KeyboardInterrupt:  # the workers are mid-command: their answers would
                    self._abort()  # desynchronise the pipes, so stop them all
                    raise
                ready = [fd_map[fd] for fd, _ in events]
            else:  # pragma: no cover - Windows
                objs = [conns[i] for i in pending] + [procs[i].sentinel for i in pending]
                got = mp.connection.wait(objs, timeout=remaining)
                ready = [("conn", i) for i in pending if conns[i] in got]
                ready += [("proc", i) for i in pending if procs[i].sentinel in got]
            for kind, i in ready:
                if i not in pending:
                    # it owes no answer (none asked, or already given): an event on its pipe or
                    # process means it closed its pipe or exited
                    self._fail_dead(i, command)
                conn = conns[i]
                if kind == "proc" and not conn.poll(0):  # what it sent before exiting is read first
                    self._fail_dead(i, command)
                try:
                    data = conn.recv_bytes() if poller is None else _worker.read_message(conn.fileno())
                except (EOFError, OSError):
                    self._fail_dead(i, command)
                pending.discard(i)
                if data == _worker.ACK:
                    values[i] = None
                else:
                    answer = self._decode_answer(i, data, command)
                    if answer[0] == "error":
                        if not _keeps_running(answer, command):
                            # raised now: the worker may exit right after its answer (a failed
                            # creation does), and its exit must not be reported instead
                            self._raise_remote(i, answer, command)
                        errors.append((i, answer))
                    else:
                        values[i] = answer[1]
        if errors:
            self._raise_remote(*errors[0], command=command)
        return [values[i] for i in workers]

    def _decode_answer(self, i: int, data: bytes, command: str) -> tuple:
        try:
            return _worker.decode(data)
        except Exception as err:  # unread answers of the other workers: stop them all
            message = (
                f"{self._worker_name(i)} answered {command!r} with a value that cannot be unpickled "
                f"in the main process ({type(err).__name__}: {err}); all workers were stopped"
            )
            self._abort_and_raise(WorkerError(message, i), cause=err)
            raise  # unreachable

    def _fail_dead(self, i: int, command: str, pipe_error: BaseException | None = None) -> None:
        """Raises for worker ``i``, whose process ended or whose pipe closed, naming its exit
        status (exit code or signal)."""
        proc = self._procs[i]
        # its process ended or its pipe closed (it is exiting): a bounded wait for its status
        proc.join(_CLOSE_TIMEOUT)
        if proc.exitcode is None:
            reason = pipe_error or "end of file"
            what = f"closed its pipe ({reason}) but was still running {_CLOSE_TIMEOUT:g} s later"
        else:
            what = f"died ({describe_exit(proc.exitcode)})"
            if proc.exitcode > 0 and command == "start":  # e.g. a spawn bootstrap failure
                what += " before reporting an error (its stderr may hold a traceback)"
        self._fail(i, command, what)

    def _fail(self, i: int, command: str, what: str) -> None:
        message = f"{self._worker_name(i)} {what} {_during(command)}; all workers were stopped"
        self._abort_and_raise(WorkerError(message, i))

    def _worker_name(self, i: int) -> str:
        try:
            pid = self._procs[i].pid
        except (IndexError, ValueError):
            pid = None
        return f"ParallelEnv worker {i} (pid {pid})"

    def _raise_remote(self, i: int, answer: tuple, command: str) -> None:
        _, exc_bytes, type_name, message, tb = answer
        if _keeps_running(answer, command):
            # attribute access keeps Python's contract (hasattr/getattr default)
            raise AttributeError(message) from None
        exc = None
        if exc_bytes is not None:
            try:
                exc = _worker.decode(exc_bytes)
            except Exception:  # the exception type may not exist in this process
                exc = None
        err = WorkerError(
            f"{self._worker_name(i)} failed {_during(command)}: {type_name}: {message}\n"
            f"All workers were stopped. Worker traceback:\n{tb}",
            i,
            type_name,
            tb,
        )
        try:
            self._abort_and_raise(err, cause=exc)
        finally:
            err = exc = None

    def _abort_and_raise(self, err: BaseException, cause: BaseException | None = None) -> None:
        self._abort()
        try:
            if cause is not None:
                raise err from cause
            raise err
        finally:  # no exception <-> frame cycle: the buffers are freed with the exception
            err = cause = None

    # ------------------------------------------------------------------ commands
    def _run_step(self, present: tuple | None, workers: list[int] | None = None, extras: list | None = None) -> list:
        if workers is None:
            workers = range(self.num_workers)
        if extras is not None:
            for i in workers:
                self._send([i], _worker.encode(("step", present, extras[i])), "step")
        elif present is None:
            self._send_frame(workers, _worker.STEP_FRAME, "step")
        elif present == self._required_inputs():
            self._send_frame(workers, _worker.STEP_REQUIRED_FRAME, "step")
        else:
            self._send(workers, _worker.encode(("step", present, None)), "step")
        return self._gather(workers, "step")

    def _run_reset(self, workers: list[int], present: tuple, kwargs: dict, extras: list | None = None) -> list:
        if extras is not None:
            for i in workers:
                self._send([i], _worker.encode(("reset", present, kwargs, extras[i])), "reset")
        else:
            self._send(workers, _worker.encode(("reset", present, kwargs, None)), "reset")
        return self._gather(workers, "reset")

    def _run_step_td(self, items: list) -> list:
        for i, td in items:
            self._send([i], _worker.encode(("step_td", td)), "step")
        return self._gather([i for i, _ in items], "step")

    def _run_reset_td(self, items: list, kwargs: dict) -> list:
        for i, td in items:
            self._send([i], _worker.encode(("reset_td", td, kwargs)), "reset")
        return self._gather([i for i, _ in items], "reset")

    def _run_set_seed(self, seed: int | None, static_seed: bool, workers: list[int] | None = None) -> int | None:
        for i in range(self.num_workers) if workers is None else workers:
            self._send([i], _worker.encode(("seed", seed, static_seed)), "set_seed")
            (seed,) = self._gather([i], "set_seed")
        return seed

    def _run_getattr(self, name: str | tuple, workers: list[int] | None = None) -> list[tuple[bool, Any]]:
        workers = range(self.num_workers) if workers is None else workers
        self._send(workers, _worker.encode(("getattr", name)), f"getattr({name!r})")
        return self._gather(workers, f"getattr({name!r})")

    def _run_call(self, name: str | tuple, args: tuple, kwargs: dict, workers: list[int] | None = None) -> list:
        workers = range(self.num_workers) if workers is None else workers
        self._send(workers, _worker.encode(("call", name, args, kwargs)), f"{name}()")
        return self._gather(workers, f"{name}()")

    @property
    def worker_pids(self) -> list[int]:
        """The pids of the running workers (empty when not started).

        Examples:
            >>> import os
            >>> from gpusim.envs.native import CartPoleEnv
            >>> env = ParallelEnv(2, CartPoleEnv)
            >>> env.worker_pids
            []
            >>> env.start()
            >>> len(env.worker_pids), os.getpid() in env.worker_pids
            (2, False)
            >>> env.close()
        """
        return [proc.pid for proc in self._procs] if self._started else []


class _CreatorCall:
    """``EnvCreator`` plus kwargs, callable without arguments (keeps the creator picklable with
    its shared tensors sent by handle)."""

    def __init__(self, creator: EnvCreator, kwargs: dict) -> None:
        self.creator = creator
        self.kwargs = kwargs

    def __call__(self) -> EnvBase:
        return self.creator(**self.kwargs)
