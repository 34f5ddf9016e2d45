"""The framing between the proxy's event loop and a worker process (`ctxmill.proxy.workerpool`
on one end of a Unix socket pair, `ctxmill.proxy.worker.serve` on the other).

A frame is an 8-byte big-endian length, then that many bytes: a job is the pickle of
(function, args), its answer the pickle of (ok, value). Before a job's answer the worker may send
notices, frames of length 0: `EPOCH`, the job's run has begun planning the whole request again
(an epoch), so the proxy's latency budget counts from then (incremental work is always waited
for). Must hold: every job gets exactly one answer, after at most one notice.
"""

from __future__ import annotations

import socket

HEADER = 8
EPOCH = (0).to_bytes(HEADER, "big")


def header(size: int) -> bytes:
    return size.to_bytes(HEADER, "big")


def receive(sock: socket.socket) -> bytearray | None:
    """The next frame's bytes (a job: never a notice), None when the other end hung up."""
    head = exactly(sock, HEADER)
    return None if head is None else exactly(sock, int.from_bytes(head, "big"))


def exactly(sock: socket.socket, size: int) -> bytearray | None:
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        n = sock.recv_into(view[got:])
        if n == 0:
            return None
        got += n
    return data
