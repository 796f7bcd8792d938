"""The pipe framing of ParallelEnv workers: ``_worker.read_message`` reads what
``multiprocessing.Connection.send_bytes`` writes (and the pre-framed hot messages)."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading

import pytest

from gpusim.envs.batched import _worker


@pytest.mark.parametrize("size", [0, 1, 2, 4, 5, 16384, 16385, 300_000])
def test_reads_what_connection_writes(size):
    a, b = mp.Pipe()
    messages = [bytes([i % 251]) * size for i in range(3)] + [_worker.ACK]
    writer = threading.Thread(target=lambda: [a.send_bytes(m) for m in messages])  # large ones block
    writer.start()
    try:
        got = [_worker.read_message(b.fileno()) for _ in messages]
    finally:
        writer.join()
        a.close()
        b.close()
    assert got == messages


def test_connection_reads_what_the_frames_write():
    a, b = mp.Pipe()
    for framed, payload in [
        (_worker.STEP_FRAME, _worker.STEP),
        (_worker.STEP_REQUIRED_FRAME, _worker.STEP_REQUIRED),
        (_worker.ACK_FRAME, _worker.ACK),
    ]:
        os.write(a.fileno(), framed)
        assert b.recv_bytes() == payload


def test_a_message_written_in_parts():
    a, b = mp.Pipe()
    framed = _worker.frame(b"hello")
    os.write(a.fileno(), framed[:2])

    def rest():
        os.write(a.fileno(), framed[2:6])
        os.write(a.fileno(), framed[6:])

    writer = threading.Timer(0.05, rest)
    writer.start()
    try:
        assert _worker.read_message(b.fileno()) == b"hello"
    finally:
        writer.join()


@pytest.mark.parametrize("written", [b"", b"\x00\x00", b"\x00\x00\x00\x09abc"])
def test_closed_pipe_raises_eof(written):
    a, b = mp.Pipe()
    if written:
        os.write(a.fileno(), written)
    a.close()
    with pytest.raises(EOFError):
        _worker.read_message(b.fileno())


def test_an_empty_message_followed_by_another_in_the_pipe():
    # both messages are in the pipe before the first read: the empty one's header must not be
    # read together with a byte of the next message (which would lose it and desynchronise the
    # stream: the next read would then wait for bytes that never come)
    a, b = mp.Pipe()
    try:
        a.send_bytes(b"")
        a.send_bytes(_worker.ACK)
        a.send_bytes(b"xyz")
        assert _worker.read_message(b.fileno()) == b""
        assert _worker.read_message(b.fileno()) == _worker.ACK
        assert _worker.read_message(b.fileno()) == b"xyz"
    finally:
        a.close()
        b.close()
