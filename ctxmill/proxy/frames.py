"""The framing between the proxy's event loop and a worker process (`ctxmill.proxy.workerpool`
on one end of a Unix socket pair, `ctxmill.proxy.worker.serve` on the other).

A frame is an 8-byte big-endian length, then that many bytes: a job is the pickle of
(function, args), its answer the pickle of (ok, value). Before a job's answer the worker may send
notices, frames of length 0: `EPOCH`, the job's run has begun planning the whole request again
(an epoch), so the proxy's latency budget counts from then (incremental work is always waited
for). Must hold: every job gets exactly one answer, after at most one notice. The worker's side
also watches its socket: `arrives_within` (is a job coming, or may it write its stats now) and
`die_with_peer` (a killed proxy leaves no worker behind).
"""

from __future__ import annotations

import select
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


def arrives_within(sock: socket.socket, seconds: float) -> bool:
    """Whether a frame (or the hang-up) arrives on `sock` within `seconds`."""
    return bool(select.select([sock], [], [], seconds)[0])


def die_with_peer(sock: socket.socket) -> None:
    """End this process as soon as the proxy's end of `sock` is closed, even in the middle of a
    job: a killed proxy leaves no worker behind. (The forkserver outlives the proxy while any of
    its workers runs, so the worker's parent says nothing; the socket's hang-up does.) A daemon
    thread waits for the hang-up without reading, so jobs are not disturbed."""
    import os
    import threading

    if not hasattr(select, "poll"):
        return
    events = select.POLLHUP | getattr(select, "POLLRDHUP", 0)

    def watch() -> None:
        poller = select.poll()
        poller.register(sock.fileno(), events)
        while not poller.poll():
            pass
        os._exit(1)

    threading.Thread(target=watch, name="ctxmill-proxy-watch", daemon=True).start()
