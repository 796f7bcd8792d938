"""torch.distributed plumbing of the distributed collector: the process group (torchrun's
environment or a group given), packed collectives (one call per dtype for a list of tensors)
and a watchdog, so that a rank that dies or stalls makes the others fail with a clear error
instead of hanging.

Examples:
    >>> import torch
    >>> flat, groups = pack([torch.ones(2), torch.zeros(3, dtype=torch.long), torch.ones(1)])
    >>> [(dtype, t.tolist()) for dtype, t in flat.items()]
    [(torch.float32, [1.0, 1.0, 1.0]), (torch.int64, [0, 0, 0])]
    >>> out = [torch.empty(2), torch.empty(3, dtype=torch.long), torch.empty(1)]
    >>> unpack_(flat, groups, out)
    >>> out[0].tolist(), out[2].tolist()
    ([1.0, 1.0], [1.0])
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence

import torch
import torch.distributed as dist

__all__ = ["init_distributed", "CommError", "Comm", "pack", "unpack_"]

#: the variables a torchrun launch sets (``LOCAL_RANK`` is optional: 0 when absent)
_ENV_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


#: seconds a gloo collective waits, once it returned, for gloo's worker thread to drop its
#: references to the collective's tensors (see :func:`_settle`)
SETTLE_SECONDS = 2.0
_UNSETTLED: list = []  # tensors gloo still held after SETTLE_SECONDS: kept alive for good


def _settle(tensors: Sequence[torch.Tensor], before: Sequence[int]) -> None:
    """Waits until no work of the backend holds ``tensors`` any more (each tensor's use count is
    back to ``before``, its count before the collective).

    gloo completes a collective on a worker thread, which drops the work (and its references to
    the tensors) a little after the caller's ``wait`` returned; a later ``barrier`` may hold that
    work until it completes in turn. A tensor whose Python object was freed meanwhile hands the
    object to the C++ tensor, and the worker thread must then take the GIL to free it: if the
    interpreter is shutting down by then (the ranks' teardown barrier as a script's last line),
    the thread exits inside a destructor and the process aborts ("terminate called without an
    active exception", rank 1 of the distributed example, ~1 launch in 10 on a busy machine). A
    tensor still held after :data:`SETTLE_SECONDS` is kept alive for good instead.

    Examples:
        >>> t = torch.zeros(2)
        >>> _settle([t], [t._use_count()])  # nothing else holds it: returns at once
    """
    deadline = None
    while any(t._use_count() > n for t, n in zip(tensors, before)):
        now = time.monotonic()
        deadline = deadline or now + SETTLE_SECONDS
        if now > deadline:
            _UNSETTLED.extend(tensors)
            return
        time.sleep(1e-4)


class CommError(RuntimeError):
    """A collective of the distributed collector failed: a peer rank died, stalled past the
    timeout, or the ranks disagree (the message names the collective, the rank and the timeout).

    Examples:
        >>> import gpusim as gs
        >>> issubclass(gs.CommError, RuntimeError)   # caught by ``except RuntimeError`` too
        True
    """


def _seconds(timeout: float | datetime.timedelta) -> float:
    s = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    if not s > 0:
        raise ValueError(f"timeout must be positive (seconds or a timedelta), got {timeout!r}")
    return s


def init_distributed(backend: str | None = None, timeout: float | datetime.timedelta = 300.0) -> dist.ProcessGroup:
    """Joins (or returns) the default process group, torchrun-style.

    When ``torch.distributed`` is already initialised the default group is returned as it is.
    Otherwise the group is made from the environment a ``torchrun`` launch sets (``RANK``,
    ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``; ``LOCAL_RANK`` picks the GPU), with NCCL
    when CUDA is available (each rank on ``cuda:LOCAL_RANK``) and gloo on CPU.

    Args:
        backend: ``"nccl"``, ``"gloo"`` or None (NCCL with CUDA, else gloo).
        timeout: the collectives' timeout in seconds (or a ``timedelta``); gloo raises after it.

    Returns:
        The default process group.

    Raises:
        RuntimeError: a torchrun variable is missing (named).
        ValueError: a non-positive timeout.

    Examples:
        >>> import os, socket
        >>> import torch.distributed as dist
        >>> with socket.socket() as s:
        ...     _ = s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
        >>> os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        >>> group = init_distributed(backend="gloo", timeout=30)  # (the default is NCCL on a GPU)
        >>> dist.get_world_size(group), dist.get_backend(group)
        (1, 'gloo')
        >>> dist.destroy_process_group()
        >>> for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        ...     del os.environ[var]
    """
    seconds = _seconds(timeout)
    if dist.is_initialized():
        return dist.group.WORLD
    missing = [v for v in _ENV_VARS if v not in os.environ]
    if missing:
        raise RuntimeError(
            f"init_distributed: the environment lacks {missing} (set by torchrun: `torchrun --nproc-per-node N "
            f"script.py`); or call torch.distributed.init_process_group yourself and pass the group"
        )
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=seconds))
    return dist.group.WORLD


def pack(tensors: Sequence[torch.Tensor], device: torch.device | None = None) -> tuple[dict, dict]:
    """One flat buffer per dtype (bool travels as uint8): ``({dtype: flat}, {dtype: [index]})``."""
    groups: dict[torch.dtype, list[int]] = {}
    for i, t in enumerate(tensors):
        groups.setdefault(t.dtype, []).append(i)
    flat = {}
    for dtype, idx in groups.items():
        parts = [tensors[i].detach().reshape(-1) for i in idx]
        if device is not None:  # (the parts may live on different devices)
            parts = [p.to(device) for p in parts]
        flat[dtype] = torch.cat([p.view(torch.uint8) if dtype == torch.bool else p for p in parts])
    return flat, groups


def unpack_(flat: dict, groups: dict, out: Sequence[torch.Tensor]) -> None:
    """Copies the buffers of :func:`pack` back into ``out`` (same shapes and dtypes as packed)."""
    for dtype, idx in groups.items():
        buf = flat[dtype]
        start = 0
        for i in idx:
            n = out[i].numel()
            chunk = buf[start : start + n]
            chunk = chunk.view(torch.bool) if dtype == torch.bool else chunk
            with torch.no_grad():
                out[i].copy_(chunk.reshape(out[i].shape))
            start += n


class _Watchdog:
    """One thread per process that ends it (exit status 124, the message on stderr) when a
    collective stays armed past its deadline. Stopped and joined at exit (a thread left running
    into interpreter teardown can abort the process)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._message = None
        self._stop = False
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, message) -> None:
        with self._cond:
            if self._thread is None:
                self._stop = False
                self._thread = threading.Thread(target=self._run, name="gpusim-collective-watchdog", daemon=True)
                self._thread.start()
                atexit.register(self.stop)
            self._deadline, self._message = time.monotonic() + seconds, message
            self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._deadline = None

    def stop(self) -> None:
        with self._cond:
            thread, self._thread, self._stop = self._thread, None, True
            self._cond.notify()
        if thread is not None:
            thread.join(5)

    def _run(self) -> None:
        with self._cond:
            while not self._stop:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                print(self._message(), file=sys.stderr, flush=True)
                os._exit(124)


_WATCHDOG = _Watchdog()


class Comm:
    """The collectives the distributed collector runs, each under the group's timeout and a
    watchdog: a failure raises :class:`CommError` naming the collective, the rank and the
    timeout; a collective still blocked ``watchdog_factor`` times the timeout later (a backend
    that does not honour it) ends the process with that message on stderr (exit status 124),
    so that no rank hangs forever.

    Args:
        group: the process group.
        timeout: seconds (the group's collective timeout, as given to ``init_process_group``).
        watchdog: run the watchdog thread.
        watchdog_factor: the watchdog fires after ``watchdog_factor * timeout`` seconds.

    Examples:
        >>> comm = Comm(None, timeout=5.0)   # no group: world size 1, collectives are no-ops
        >>> comm.world_size, comm.rank
        (1, 0)
        >>> comm.all_reduce_([torch.ones(2)], "sum")
    """

    def __init__(
        self,
        group: dist.ProcessGroup | None,
        timeout: float = 300.0,
        watchdog: bool = True,
        watchdog_factor: float = 2.0,
    ) -> None:
        self.group = group
        self.timeout = _seconds(timeout)
        self.watchdog = bool(watchdog)
        self.watchdog_factor = float(watchdog_factor)
        if group is None:
            self.rank, self.world_size, self.backend, self.root = 0, 1, None, 0
        else:
            self.rank, self.world_size = dist.get_rank(group), dist.get_world_size(group)
            self.backend = dist.get_backend(group)
            self.root = dist.get_global_rank(group, 0)  # (src/dst of broadcast/gather are global ranks)
        cuda = self.backend == "nccl"
        self.device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")

    def _fail(self, what: str, err: BaseException | None) -> str:
        cause = f": {type(err).__name__}: {err}" if err is not None else ""
        return (
            f"gpusim distributed collector, rank {self.rank} of {self.world_size}: {what} failed; another rank "
            f"probably died or stopped answering (collective timeout {self.timeout:g} s){cause}"
        )

    @contextlib.contextmanager
    def guard(self, what: str) -> Iterator[None]:
        """Runs a collective: errors become :class:`CommError`; the watchdog ends the process
        if it never returns."""
        if self.watchdog:
            _WATCHDOG.arm(
                self.watchdog_factor * self.timeout,
                lambda: self._fail(
                    what, TimeoutError(f"watchdog: still blocked after {self.watchdog_factor * self.timeout:g} s")
                ),
            )
        try:
            yield
        except CommError:
            raise
        except RuntimeError as err:  # (torch.distributed's DistError family included)
            raise CommError(self._fail(what, err)) from err
        finally:
            if self.watchdog:
                _WATCHDOG.disarm()

    def _in_place(self, tensors: Sequence[torch.Tensor], what: str, collective) -> None:
        """Runs ``collective(buffer)`` on the packed ``tensors`` (one buffer per dtype) and
        copies the results back."""
        if self.world_size == 1 or not tensors:
            return
        flat, groups = pack(tensors, self.device)
        bufs = list(flat.values())
        before = [b._use_count() for b in bufs]
        with self.guard(what):
            for buf in bufs:
                collective(buf)
        self._settled(bufs, before)
        unpack_(flat, groups, tensors)

    def _settled(self, tensors: Sequence[torch.Tensor], before: Sequence[int]) -> None:
        """:func:`_settle` after a gloo collective (other backends keep their own lifetimes)."""
        if self.backend == "gloo":
            _settle(tensors, before)

    def broadcast_(self, tensors: Sequence[torch.Tensor], what: str = "broadcast") -> None:
        """Overwrites ``tensors`` with the group's rank 0's (one collective per dtype)."""
        self._in_place(tensors, what, lambda buf: dist.broadcast(buf, src=self.root, group=self.group))

    def all_reduce_(self, tensors: Sequence[torch.Tensor], what: str = "all_reduce") -> None:
        """Sums ``tensors`` over the ranks in place (one collective per dtype)."""
        self._in_place(tensors, what, lambda buf: dist.all_reduce(buf, op=dist.ReduceOp.SUM, group=self.group))

    def all_gather(self, tensor: torch.Tensor, what: str = "all_gather") -> list[torch.Tensor]:
        """Every rank's ``tensor`` (same shape and dtype on every rank), in rank order."""
        if self.world_size == 1:
            return [tensor]
        t = tensor.to(self.device).contiguous()
        out = [torch.empty_like(t) for _ in range(self.world_size)]
        before = [x._use_count() for x in (t, *out)]
        with self.guard(what):
            dist.all_gather(out, t, group=self.group)
        self._settled((t, *out), before)
        return [o.to(tensor.device) for o in out]

    def gather(self, tensor: torch.Tensor, what: str = "gather") -> list[torch.Tensor] | None:
        """Every rank's 1-D ``tensor`` on the group's rank 0 (None elsewhere)."""
        if self.world_size == 1:
            return [tensor]
        t = tensor.to(self.device).contiguous()
        out = [torch.empty_like(t) for _ in range(self.world_size)] if self.rank == 0 else None
        held = (t, *(out or ()))
        before = [x._use_count() for x in held]
        with self.guard(what):
            dist.gather(t, out, dst=self.root, group=self.group)
        self._settled(held, before)
        return None if out is None else [o.to(tensor.device) for o in out]
