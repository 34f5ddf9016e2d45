"""What goes over the wire: header filtering, bounded body reads, provider-shaped errors.

Must hold: hop-by-hop headers (RFC 9110 §7.6.1, plus any named in `Connection`) are never
forwarded in either direction; `host` and `content-length` are set by the HTTP client for the
body actually sent; on compressing routes `accept-encoding: identity` is asked of the upstream
so the proxy can read usage while passing the response bytes through unchanged. Header values
are never logged.
"""

from __future__ import annotations

from typing import Iterable

import orjson
from starlette.requests import Request
from starlette.responses import Response

HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "transfer-encoding", "upgrade",
})


LONG_CONTEXT_BETA = "context-1m"
LONG_CONTEXT_WINDOW = 1_000_000


def declared_context_window(headers: Iterable[tuple[str, str]]) -> int | None:
    """The context window a request declares in its headers: 1M tokens when its `anthropic-beta`
    names the long-context beta (`context-1m-2025-08-07`, which Claude Code 2.1 always sends),
    else None (unknown: the tiers keep their configured thresholds)."""
    for name, value in headers:
        if name.lower() == "anthropic-beta" and any(
                t.strip().startswith(LONG_CONTEXT_BETA) for t in value.split(",")):
            return LONG_CONTEXT_WINDOW
    return None


class BodyTooLarge(Exception):
    pass


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


async def read_body(request: Request, limit: int) -> bytes:
    """The whole request body, or BodyTooLarge as soon as it exceeds `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge()
        chunks.append(chunk)
    return b"".join(chunks)


def error_response(vendor: str, status: int, kind: str, message: str) -> Response:
    """A JSON error in the API's own shape ("anthropic" or "openai"), so SDKs raise their usual exceptions."""
    if vendor == "anthropic":
        body = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")
