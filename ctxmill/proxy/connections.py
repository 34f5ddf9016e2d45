"""What a client connection may hold before its request is read: time, header bytes, a slot.

uvicorn bounds none of these: a client that opens a connection and sends half a request line
holds a file descriptor forever, and enough of them starve real requests (the event loop can no
longer accept). `guarded_protocol(limits)` is uvicorn's own HTTP protocol with these rules.
Must hold:
- A connection whose request headers are not complete `client_timeout` seconds after it opened
  (or after its previous response) is closed.
- Request headers larger than MAX_HEADER_BYTES are answered 431 and the connection closed.
- At most `max_connections` client connections are open. A connection beyond that closes the
  one that has waited longest without a request in progress (a slow or idle client, so real
  requests get through a flood of half-sent ones); when every connection has a request in
  progress, the new one is answered 503 and closed.
- Each connection closed this way is one log line, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("ctxmill.proxy")

MAX_HEADER_BYTES = 256 * 1024
"""Request line and headers; Anthropic and OpenAI clients send a few KB."""


@dataclass(frozen=True)
class ClientLimits:
    client_timeout: float
    max_connections: int


def guarded_protocol(limits: ClientLimits) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol bound by `limits` (pass it as uvicorn's `http`)."""
    return type("GuardedHttpProtocol", (_Guarded,), {"limits": limits})


def _plain_response(status: bytes, message: str) -> bytes:
    body = message.encode()
    return (b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


class _Guarded(HttpToolsProtocol):
    limits: ClientLimits

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.in_request = False
        self.waiting_since = self.loop.time()
        self.header_bytes = 0
        self.header_timer: asyncio.TimerHandle | None = None
        self._await_headers()
        self._make_room()

    def data_received(self, data: bytes) -> None:
        if not self.in_request:
            self.header_bytes += len(data)
        super().data_received(data)
        if not self.in_request and self.header_bytes > MAX_HEADER_BYTES and not self.transport.is_closing():
            self._close(b"431 Request Header Fields Too Large",
                        f"ctxmill proxy: request headers exceed {MAX_HEADER_BYTES:,} bytes")

    def on_headers_complete(self) -> None:
        self.in_request = True
        self._cancel_timer()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)  # uvicorn starts a request that arrived meanwhile
        super().on_response_complete()
        self.in_request = pipelined
        if not pipelined and not self.transport.is_closing():
            self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        super().connection_lost(exc)

    # -- the rules -----------------------------------------------------------------

    def _await_headers(self) -> None:
        self.waiting_since = self.loop.time()
        self.header_bytes = 0
        self._cancel_timer()
        self.header_timer = self.loop.call_later(self.limits.client_timeout, self._headers_too_slow)

    def _cancel_timer(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _headers_too_slow(self) -> None:
        self.header_timer = None
        if not self.in_request and not self.transport.is_closing():
            if self.header_bytes:
                log.info("client connection closed: request headers not complete within %g s (%d bytes sent)",
                         self.limits.client_timeout, self.header_bytes)
            self.transport.close()  # an idle keep-alive connection (no bytes) closes silently

    def _make_room(self) -> None:
        if len(self.connections) <= self.limits.max_connections:
            return
        idle = [c for c in self.connections if isinstance(c, _Guarded) and c is not self and not c.in_request
                and not c.transport.is_closing()]
        if idle:
            oldest = min(idle, key=lambda c: c.waiting_since)
            log.info("client connection closed: %d connections open (max_connections), this one waited %.1f s "
                     "without a request", len(self.connections), self.loop.time() - oldest.waiting_since)
            oldest.transport.close()
            self.connections.discard(oldest)
            return
        self._close(b"503 Service Unavailable", f"ctxmill proxy: {self.limits.max_connections} connections "
                    "with requests in progress (max_connections); retry shortly")

    def _close(self, status: bytes, message: str) -> None:
        log.info("client connection closed: %s", message)
        self.transport.write(_plain_response(status, message))
        self.transport.close()
        self.connections.discard(self)
