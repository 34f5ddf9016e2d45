"""Which API a request belongs to and whether its body goes through the transform.

Compressing routes: `POST` to the endpoint of each request shape in
`compress.formats.requests.SHAPES` (Anthropic `/v1/messages`, OpenAI `/v1/chat/completions`
and `/v1/responses`), plus Anthropic's `POST /v1/messages/count_tokens`. Every other request
(GETs, websocket upgrades, `/v1/responses/compact`, …) is forwarded untouched, to the
Anthropic upstream when the path is an Anthropic one (`/v1/messages…`, `/v1/complete`) or the
request carries `anthropic-version` / `x-api-key`, else to the OpenAI upstream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from compress.formats.requests import SHAPES
from ctxmill.settings import ProxyConfig

COMPRESS = "compress"
COUNT_TOKENS = "count_tokens"
_COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
_COMPRESSING = {shape.ENDPOINT: name for name, shape in SHAPES.items()}


@dataclass(frozen=True)
class Route:
    vendor: str  # "anthropic" | "openai": whose API (the upstream, the shape of errors)
    shape: str | None  # the request shape (a SHAPES name) on a compressing route
    kind: str | None  # COMPRESS | COUNT_TOKENS, None = forward untouched
    upstream: str


def route(method: str, path: str, headers: Mapping[str, str], config: ProxyConfig) -> Route:
    normalized = path.rstrip("/") or "/"
    shape = kind = None
    if method == "POST" and normalized in _COMPRESSING:
        shape, kind = _COMPRESSING[normalized], COMPRESS
    elif method == "POST" and normalized == _COUNT_TOKENS_PATH:
        shape, kind = "anthropic", COUNT_TOKENS
    if shape is not None:
        vendor = SHAPES[shape].VENDOR
    else:
        anthropic = (normalized.startswith(("/v1/messages", "/v1/complete"))
                     or "anthropic-version" in headers or "x-api-key" in headers)
        vendor = "anthropic" if anthropic else "openai"
    upstream = config.upstream_anthropic if vendor == "anthropic" else config.upstream_openai
    return Route(vendor, shape, kind, upstream.rstrip("/"))
