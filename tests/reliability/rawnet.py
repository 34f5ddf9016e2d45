"""Loopback sockets that misbehave on purpose: an upstream that breaks its answers, clients that
stall or vanish. Everything listens on 127.0.0.1 and every wait is bounded."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

ANSWER_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"


def read_request(conn: socket.socket, limit: float = 10.0) -> bytes:
    """One whole request (headers and a content-length body) from `conn`."""
    conn.settimeout(limit)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


class RawUpstream:
    """An upstream on 127.0.0.1 that reads each request whole, then does `behaviour(conn)` and
    closes. Counts the requests it received."""

    def __init__(self, behaviour: Callable[[socket.socket], None]) -> None:
        self.behaviour = behaviour
        self.received: list[bytes] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> RawUpstream:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept (closing alone does not)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(timeout=10)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    self.received.append(read_request(conn))
                    self.behaviour(conn)
                except OSError:
                    pass


def close_at_once(conn: socket.socket) -> None:
    """Took the request, answers nothing."""


def cut_length_body(conn: socket.socket) -> None:
    """Promises 1,000 bytes, sends 100."""
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n" + b"{" * 100)


def cut_event_stream(conn: socket.socket) -> None:
    """An SSE answer in chunked encoding that stops after two events, without the last chunk."""
    conn.sendall(ANSWER_HEAD + b"transfer-encoding: chunked\r\n\r\n")
    for event in (b'event: message_start\ndata: {"type":"message_start"}\n\n', b"event: ping\ndata: {}\n\n"):
        conn.sendall(b"%x\r\n%s\r\n" % (len(event), event))


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    return sock


def is_closed_by_peer(sock: socket.socket, wait: float) -> bool:
    """True when the peer closed `sock` (EOF or reset) within `wait` seconds; whatever the peer
    sent before closing is read and dropped."""
    sock.settimeout(wait)
    try:
        while sock.recv(65536):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
