"""What goes over the wire: header filtering, bounded body reads, provider-shaped errors.

Must hold: hop-by-hop headers (RFC 9110 §7.6.1, plus any named in `Connection`) are never
forwarded in either direction; `host` and `content-length` are set by the HTTP client for the
body actually sent; on compressing routes `accept-encoding: identity` is asked of the upstream
so the proxy can read usage while passing the response bytes through unchanged. Header values
are never logged. A body is read within `max_body_bytes`, with at most `client_timeout` seconds
between its chunks, and counted in the proxy's in-flight bytes as it arrives. An upstream
failure is reported as what happened (no connection, no answer in time, connection closed
without a complete answer), never as "unreachable" once the upstream took the connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import httpx
import orjson
from starlette.requests import Request
from starlette.responses import Response

from ctxmill.proxy.inflight import Held

HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "transfer-encoding", "upgrade",
})


class BodyTooLarge(Exception):
    pass


class ClientGone(Exception):
    """The client disconnected before its request body was complete (args: bytes received)."""


class ClientTooSlow(Exception):
    """The client sent no body bytes for `client_timeout` seconds (args: bytes received)."""


def _connection_tokens(pairs: Iterable[tuple[str, str]]) -> set[str]:
    named: set[str] = set()
    for name, value in pairs:
        if name.lower() == "connection":
            named |= {t.strip().lower() for t in value.split(",") if t.strip()}
    return named


def upstream_headers(pairs: list[tuple[str, str]], *, identity_encoding: bool) -> list[tuple[str, str]]:
    """Client request headers to send upstream (order and repeats kept)."""
    drop = HOP_BY_HOP | _connection_tokens(pairs) | {"host", "content-length"}
    if identity_encoding:
        drop = drop | {"accept-encoding"}
    out = [(k, v) for k, v in pairs if k.lower() not in drop]
    if identity_encoding:
        out.append(("accept-encoding", "identity"))
    return out


def downstream_headers(pairs: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Upstream response headers to send to the client (raw bytes, repeats kept)."""
    drop = HOP_BY_HOP | _connection_tokens((k.decode("latin-1"), v.decode("latin-1")) for k, v in pairs)
    return [(k, v) for k, v in pairs if k.decode("latin-1").lower() not in drop]


async def read_body(request: Request, limit: int, held: Held, timeout: float) -> bytes:  # noqa: ASYNC109 - per byte
    """The whole request body, counted in `held` as it arrives (a declared length is taken before
    the first byte is read). BodyTooLarge as soon as it exceeds `limit` bytes, ClientTooSlow after
    `timeout` seconds without a byte, ClientGone when the client disconnects, NoRoom when the
    proxy's in-flight bytes have no room for it."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit():
        if int(declared) > limit:
            raise BodyTooLarge()
        await held.grow(int(declared))
    chunks: list[bytes] = []
    size, more = 0, True
    while more:
        try:
            message = await asyncio.wait_for(request.receive(), timeout)
        except TimeoutError:
            raise ClientTooSlow(size) from None
        if message["type"] == "http.disconnect":
            raise ClientGone(size)
        chunk, more = message.get("body", b""), message.get("more_body", False)
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge()
        if size > held.size:
            await held.grow(size - held.size)
        chunks.append(chunk)
    return b"".join(chunks)


def upstream_failure(exc: httpx.HTTPError, host: str, read_timeout: float) -> tuple[int, str]:
    """(status, message) for a request the upstream did not answer: what happened, in words."""
    name = type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        return 502, f"upstream {host} unreachable: no connection within the connect timeout ({name})"
    if isinstance(exc, httpx.ConnectError):
        return 502, f"upstream {host} unreachable: {exc} ({name})"
    if isinstance(exc, httpx.TimeoutException):
        return 504, f"upstream {host} took the request but sent no answer within {read_timeout:g} s ({name})"
    if isinstance(exc, httpx.RemoteProtocolError):
        return 502, f"upstream {host} closed the connection without a complete answer ({name})"
    if isinstance(exc, (httpx.ReadError, httpx.WriteError)):
        return 502, f"connection to upstream {host} broke before its answer ({name})"
    return 502, f"request to upstream {host} failed ({name})"


def error_response(vendor: str, status: int, kind: str, message: str, close: bool = False) -> Response:
    """A JSON error in the API's own shape ("anthropic" or "openai"), so SDKs raise their usual
    exceptions. `close`: end the connection after it (the request body was not read to its end)."""
    if vendor == "anthropic":
        body = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    headers = {"connection": "close"} if close else None
    return Response(orjson.dumps(body), status_code=status, media_type="application/json", headers=headers)
