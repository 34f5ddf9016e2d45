"""Which API a request belongs to and whether its body goes through the transform.

One table decides, first match wins (`route`):
1. Compressing routes: `POST` to the endpoint of each request shape in
   `compress.formats.requests.SHAPES` (Anthropic `/v1/messages`, OpenAI `/v1/chat/completions`
   and `/v1/responses`), plus Anthropic's `POST /v1/messages/count_tokens`: the shape's vendor.
2. Paths only Anthropic serves (`ANTHROPIC_PATHS`: `/v1/messages…`, `/v1/complete`, and `/api/…`,
   where Claude Code reads its OAuth profile, settings and feature flags): Anthropic.
3. Anthropic credentials or headers (`anthropic_credentials`): `x-api-key`, `anthropic-version`,
   `anthropic-beta`, or a bearer token `sk-ant-…` (API keys and Claude OAuth tokens
   `sk-ant-oat01-…` alike): Anthropic. So `GET /v1/models`, which both vendors serve, goes where
   its credentials belong.
4. Everything else: OpenAI.
Every request but the compressing ones (GETs, websocket upgrades, `/v1/responses/compact`, …) is
forwarded untouched. Credentials are read, never logged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from compress.formats.requests import SHAPES
from ctxmill.proxy_config import ProxyConfig

COMPRESS = "compress"
COUNT_TOKENS = "count_tokens"
_COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
_COMPRESSING = {shape.ENDPOINT: name for name, shape in SHAPES.items()}
ANTHROPIC_PATHS = ("/v1/messages", "/v1/complete", "/api/")
ANTHROPIC_HEADERS = ("x-api-key", "anthropic-version", "anthropic-beta")
ANTHROPIC_TOKEN_PREFIX = "sk-ant-"


@dataclass(frozen=True)
class Route:
    vendor: str  # "anthropic" | "openai": whose API (the upstream, the shape of errors)
    shape: str | None  # the request shape (a SHAPES name) on a compressing route
    kind: str | None  # COMPRESS | COUNT_TOKENS, None = forward untouched
    upstream: str


def anthropic_credentials(headers: Mapping[str, str]) -> bool:
    if any(name in headers for name in ANTHROPIC_HEADERS):
        return True
    scheme, _, token = headers.get("authorization", "").strip().partition(" ")
    return scheme.lower() == "bearer" and token.strip().startswith(ANTHROPIC_TOKEN_PREFIX)


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
        anthropic = normalized.startswith(ANTHROPIC_PATHS) or anthropic_credentials(headers)
        vendor = "anthropic" if anthropic else "openai"
    upstream = config.upstream_anthropic if vendor == "anthropic" else config.upstream_openai
    return Route(vendor, shape, kind, upstream.rstrip("/"))
