"""The framing between the proxy's event loop and a worker process (`ctxmill.proxy.workerpool`
on one end of a Unix socket pair, `ctxmill.proxy.worker.serve` on the other).

A frame is an 8-byte big-endian length, then that many bytes: a job is the pickle of
(function, args), its answer the pickle of (ok, value). Before a job's answer the worker may send
notices, frames of length 0: `EPOCH`, the job's run has begun planning the whole request again
(an epoch), so the proxy's latency budget counts from then (incremental work is always waited
for). Must hold: every job gets exactly one answer, after at most one notice. The worker's side
also watches its socket: `arrives_within` (is a job coming, or may it write its stats now) and
`die_with_peer` (a killed proxy leaves no worker behind).

Where the system has anonymous memory files (Linux), both ends also map one `Region` (its file
descriptor passed over the socket pair once, first thing: `offer_region` / `accept_region`; it
has no name anywhere and no other process can open it). A frame that fits in it is copied there
and only its header crosses the socket, with `SHARED` set: one wake-up of the reader instead of
one per socket buffer of a 0.8 MB body, and no kernel copies of its bytes. A frame larger than
the region, or without one, goes over the socket as before; the bytes read are the same either
way. One frame is in the region at a time: a job is read out of it before its answer is written,
and its answer before the next job (a worker has one job at a time).
"""

from __future__ import annotations

import mmap
import os
import select
import socket

HEADER = 8
EPOCH = (0).to_bytes(HEADER, "big")
SHARED = 1 << 63
"""Set in a frame's header when its bytes are in the region, not on the socket."""
REGION_BYTES = 4 * 2**20
"""The size `offer_region` gives a region: a frame up to it (requests of ~1M tokens) goes through
it. Only the pages the largest frame so far touched take memory (shared by both ends)."""


def header(size: int) -> bytes:
    return size.to_bytes(HEADER, "big")


class Region:
    """The memory one worker and the proxy's event loop both map (see the module's docstring)."""

    def __init__(self, fd: int) -> None:
        try:
            self.map = mmap.mmap(fd, os.fstat(fd).st_size)  # the size its creator gave it
        finally:
            os.close(fd)  # the mapping keeps the memory; no descriptor stays open

    def pack(self, payload: bytes) -> tuple[bytes, bytes]:
        """(header, bytes to send after it) for one frame: the header alone once the payload
        is in the region; the whole frame on the socket when it does not fit."""
        if len(payload) > len(self.map):
            return header(len(payload)), payload
        self.map[:len(payload)] = payload
        return header(len(payload) | SHARED), b""

    def view(self, size: int) -> memoryview:
        """The frame `SHARED` announced: a view of the region (release it before the next frame)."""
        return memoryview(self.map)[:size]


def pack(payload: bytes, region: Region | None) -> tuple[bytes, bytes]:
    return region.pack(payload) if region is not None else (header(len(payload)), payload)


def offer_region(sock: socket.socket) -> Region | None:
    """Create the region and pass it to the worker at `sock`'s other end (before any job); None,
    and the worker told so, where the system has no anonymous memory files."""
    if not hasattr(os, "memfd_create"):
        sock.sendall(b"-")
        return None
    fd = os.memfd_create("ctxmill-proxy-frames", os.MFD_CLOEXEC)
    os.ftruncate(fd, REGION_BYTES)
    socket.send_fds(sock, [b"R"], [fd])
    return Region(fd)


def accept_region(sock: socket.socket) -> Region | None:
    """The worker's side of `offer_region`: the proxy's region, or None without one."""
    _, fds, _, _ = socket.recv_fds(sock, 1, 1)
    return Region(fds[0]) if fds else None


def receive(sock: socket.socket, region: Region | None = None) -> memoryview | None:
    """The next frame's bytes (a job: never a notice), None when the other end hung up."""
    head = exactly(sock, HEADER)
    if head is None:
        return None
    size = int.from_bytes(head, "big")
    if size & SHARED:
        if region is None:
            raise ConnectionError("a frame in a shared region that was never offered")
        return region.view(size & ~SHARED)
    data = exactly(sock, size)
    return None if data is None else memoryview(data)


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
