"""The loop of a ``ParallelEnv`` worker process, and the wire format of its pipe.

Messages are bytes. The hot commands are single bytes: ``b"s"`` steps on every input entry,
``b"a"`` on the action and state entries only (``KeyPlan.required_inputs``: the main process did
not write the observations, which no worker reads); both are answered ``b"k"`` when the step has
no non-tensor output. A worker answers its start with whether its env reads observation inputs
(``WorkerRunner.reads_observations``). Every other command or answer is a pickled tuple (pickles
start with ``b"\\x80"``):

* ``("step", present, extra)``, ``("reset", present, kwargs, extra)`` (``extra``: non-tensor
  inputs), ``("step_td", td)``, ``("reset_td", td, kwargs)`` (without buffers: the data travels
  in the message and the answer), ``("seed", seed, static_seed)``, ``("getattr", name)``,
  ``("call", name, args, kwargs)``, ``("close",)``;
* answers ``("ok", value)`` or ``("error", pickled_exception_or_None, type_name, message,
  traceback)``.

The worker exits when told to close, when its pipe closes, or when its parent process is gone
(checked every second while idle), so it never outlives the main process for long. It also
exits after answering an error to its env creation or to a command it could not unpickle.

Examples:
    >>> encode(("seed", 0, False))[:1] != STEP
    True
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import traceback
from typing import Any

import torch

from gpusim.envs.batched import _serialize

__all__ = [
    "worker_main",
    "main_process_alive",
    "PickledFactory",
    "encode",
    "decode",
    "frame",
    "read_message",
    "STEP",
    "STEP_REQUIRED",
    "ACK",
]

STEP = b"s"
STEP_REQUIRED = b"a"
ACK = b"k"

_LENGTH = struct.Struct("!i")


def frame(payload: bytes) -> bytes:
    """``payload`` as ``multiprocessing.Connection.send_bytes`` puts it on the pipe (its length
    as a 4-byte big-endian int, then the bytes): the hot one-byte messages are framed once and
    written with one ``os.write`` (``Connection`` costs a few microseconds more per message).

    Examples:
        >>> frame(ACK)
        b'\\x00\\x00\\x00\\x01k'
    """
    return _LENGTH.pack(len(payload)) + payload


STEP_FRAME, STEP_REQUIRED_FRAME, ACK_FRAME = frame(STEP), frame(STEP_REQUIRED), frame(ACK)
_ONE_BYTE = _LENGTH.pack(1)


def _read_some(fd: int, n: int) -> bytes:
    chunk = os.read(fd, n)
    if not chunk:
        raise EOFError("the pipe was closed")
    return chunk


def read_message(fd: int) -> bytes:
    """One message from the pipe ``fd`` in ``Connection``'s framing (what ``recv_bytes`` returns;
    the header, then the payload: never a byte of the next message). Blocks until the whole
    message is there.

    Raises:
        EOFError: the other end closed the pipe.

    Examples:
        >>> import multiprocessing as mp
        >>> a, b = mp.Pipe()
        >>> a.send_bytes(b"x" * 50_000)  # over 16 KiB: Connection writes it in two parts
        >>> a.send_bytes(encode(("ok", 3)))
        >>> len(read_message(b.fileno())), decode(read_message(b.fileno()))
        (50000, ('ok', 3))
        >>> _ = os.write(a.fileno(), ACK_FRAME)
        >>> read_message(b.fileno()) == ACK
        True
    """
    # the header alone first: reading past it could take bytes of the next message (a message
    # of zero bytes followed by another one already in the pipe)
    data = _read_some(fd, 4)
    while len(data) < 4:
        data += _read_some(fd, 4 - len(data))
    if data == _ONE_BYTE:
        return _read_some(fd, 1)
    (size,) = _LENGTH.unpack_from(data)
    rest = b""
    if size == -1:  # a message over 2 GiB: its length follows as 8 bytes
        while len(rest) < 8:
            rest += _read_some(fd, 8 - len(rest))
        (size,) = struct.unpack_from("!Q", rest)
        rest = rest[8:]
    parts, got = [rest], len(rest)
    while got < size:
        chunk = _read_some(fd, min(size - got, 1 << 24))
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


_IDLE_CHECK_S = 1.0


def main_process_alive(parent_pid: int, first_ppid: int) -> bool:
    """Whether the worker's main process still runs: the worker's parent is still the one it
    started with (the main process when forked or spawned, the forkserver, which exits with the
    main process, otherwise) and ``parent_pid`` still exists.

    Examples:
        >>> import os
        >>> main_process_alive(os.getpid(), os.getppid())
        True
        >>> main_process_alive(os.getpid(), -1)  # reparented: the parent is gone
        False
    """
    if os.getppid() != first_ppid:
        return False
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists (under another user)
        pass
    return True


def encode(message: tuple) -> bytes:
    """Pickles a command or answer."""
    return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


def decode(data: bytes) -> tuple:
    """Unpickles a command or answer."""
    return pickle.loads(data)


class PickledFactory:
    """An env factory (with its kwargs) carried as cloudpickle bytes, for spawned workers.

    Examples:
        >>> from gpusim.envs.native import CartPoleEnv
        >>> PickledFactory(lambda **kw: CartPoleEnv(**kw), {"batch_size": [2]})().batch_size
        torch.Size([2])
    """

    def __init__(self, fn: Any, kwargs: dict | None = None) -> None:
        self.payload = _serialize.dumps((fn, dict(kwargs or {})))

    def __call__(self) -> Any:
        fn, kwargs = _serialize.loads(self.payload)
        return fn(**kwargs)


def _idle_poll(conn: Any) -> Any:
    """``poll(seconds) -> bool``: whether ``conn`` has data within ``seconds``. One
    ``select.poll`` registered once where the platform has it (``Connection.poll`` builds a
    selector on every call, a few microseconds per step), else ``conn.poll``.

    Examples:
        >>> import multiprocessing as mp
        >>> a, b = mp.Pipe()
        >>> poll = _idle_poll(b)
        >>> poll(0.0)
        False
        >>> a.send_bytes(STEP)
        >>> poll(1.0), b.recv_bytes() == STEP
        (True, True)
    """
    if not hasattr(select, "poll"):  # pragma: no cover - Windows
        return conn.poll
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)

    def poll(seconds: float) -> bool:
        return bool(poller.poll(seconds * 1000.0))

    return poll


def _error(err: BaseException) -> bytes:
    """The error answer for ``err`` (being handled): never raises, so the failure always reaches
    the main process, even for an exception that cannot be printed or pickled."""
    try:
        tb = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    except Exception:
        tb = "(the worker could not format the traceback)\n"
    try:
        message = str(err)
    except Exception:
        message = f"(unprintable {type(err).__name__})"
    try:
        exc: bytes | None = pickle.dumps(err)
    except Exception:
        exc = None
    return encode(("error", exc, type(err).__name__, message, tb))


def worker_main(
    index: int,
    conn: Any,
    factory: Any,
    plan: Any,
    buffers: tuple,
    num_threads: int,
    parent_pid: int,
    close_fds: list,
) -> None:
    """Body of worker ``index``: builds the env, then serves commands until closed.

    Args:
        index: the worker's row in the shared buffers.
        conn: the worker end of its pipe.
        factory: a no-argument callable returning the env.
        plan: the batched env's :class:`~gpusim.envs.batched._shared.KeyPlan`, or ``None``
            (``metadata_from_workers``): the worker first answers with its env's metadata, then
            receives ``("plan", plan)`` (or ``("close",)``).
        buffers: the shared ``(inputs, reset_out, next_out)`` tensordicts, the memory-mapped
            :class:`~gpusim.envs.batched._shared.FileBuffers`, or ``None`` (no buffers: the data
            travels through the pipe).
        num_threads: torch threads of this worker.
        parent_pid: pid of the main process (the worker exits when it disappears, or when the
            worker's own parent changes: :func:`main_process_alive`).
        close_fds: pipe ends inherited from the parent (forked workers) to close here.
    """
    from gpusim.envs.batched._runner import WorkerRunner
    from gpusim.envs.batched._shared import Buffers, FileBuffers

    runner = None
    first_ppid = os.getppid()  # the main process, or the forkserver under "forkserver"
    try:
        for other in close_fds:
            try:
                other.close()
            except OSError:
                pass
        torch.set_num_threads(num_threads)
        env = factory()
        if plan is None:  # metadata_from_workers: the main process reads this env's specs first
            from gpusim.envs.batched.metadata import EnvMetaData

            conn.send_bytes(encode(("ok", EnvMetaData.metadata_from_env(env))))
            message = decode(conn.recv_bytes())
            if message[0] == "close":  # the workers' specs disagree
                env.close()
                conn.send_bytes(encode(("ok", None)))
                conn.close()
                return
            plan = message[1]  # ("plan", plan)
        if buffers is None:
            exchange = None
        elif isinstance(buffers, FileBuffers):
            exchange = buffers.open(plan)
        else:
            exchange = Buffers.from_tensordicts(plan, *buffers)
        runner = WorkerRunner(env, plan, exchange, index)
    except BaseException as err:  # report the failure, then exit
        try:
            conn.send_bytes(_error(err))
        except (OSError, ValueError):  # the main process is gone
            pass
        conn.close()
        return
    conn.send_bytes(encode(("ok", runner.reads_observations)))
    send, poll, fd = conn.send_bytes, _idle_poll(conn), conn.fileno()
    try:
        while True:
            if not poll(_IDLE_CHECK_S):
                if not main_process_alive(parent_pid, first_ppid):
                    break
                continue
            data = read_message(fd)
            if data == STEP or data == STEP_REQUIRED:
                try:
                    value = runner.step(None if data == STEP else runner.required)
                except BaseException as err:
                    send(_error(err))
                    continue
                if value is None:
                    os.write(fd, ACK_FRAME)  # 5 bytes: one write, never split
                else:
                    send(encode(("ok", value)))
                continue
            message = decode(data)
            command = message[0]
            if command == "close":
                try:
                    runner.close()
                except BaseException as err:
                    send(_error(err))
                    break
                send(encode(("ok", None)))
                break
            try:
                if command == "step":
                    value = runner.step(message[1], message[2])
                elif command == "reset":
                    value = runner.reset(message[1], message[2], message[3])
                elif command == "step_td":
                    value = runner.step_td(message[1])
                elif command == "reset_td":
                    value = runner.reset_td(message[1], message[2])
                elif command == "seed":
                    value = runner.set_seed(message[1], message[2])
                elif command == "getattr":
                    value = runner.getattr(message[1])
                elif command == "call":
                    value = runner.call(message[1], message[2], message[3])
                else:
                    raise ValueError(f"unknown worker command {command!r}")
                answer = encode(("ok", value))
            except BaseException as err:
                answer = _error(err)
            send(answer)
    except (EOFError, OSError, KeyboardInterrupt):  # pipe closed or interrupted: just exit
        pass
    except Exception as err:  # e.g. a command that cannot be unpickled here: answer it, then exit
        try:
            send(_error(err))
        except (OSError, ValueError):
            pass
    finally:
        conn.close()
