"""Which provider a request belongs to and whether its body goes through the transform.

Compressing routes: Anthropic `POST /v1/messages` and `POST /v1/messages/count_tokens`,
OpenAI `POST /v1/chat/completions`. Every other request is forwarded untouched, to the
Anthropic upstream when the path is an Anthropic one (`/v1/messages…`, `/v1/complete`) or the
request carries `anthropic-version` / `x-api-key`, else to the OpenAI upstream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ctxmill.settings import ProxyConfig

MESSAGES = "messages"
COUNT_TOKENS = "count_tokens"
CHAT = "chat"

_COMPRESSING = {
    "/v1/messages": ("anthropic", MESSAGES),
    "/v1/messages/count_tokens": ("anthropic", COUNT_TOKENS),
    "/v1/chat/completions": ("openai", CHAT),
}


@dataclass(frozen=True)
class Route:
    provider: str  # "anthropic" | "openai"
    kind: str | None  # MESSAGES | COUNT_TOKENS | CHAT, None = forward untouched
    upstream: str


def route(method: str, path: str, headers: Mapping[str, str], config: ProxyConfig) -> Route:
    normalized = path.rstrip("/") or "/"
    hit = _COMPRESSING.get(normalized) if method == "POST" else None
    if hit:
        provider, kind = hit
    else:
        kind = None
        anthropic = (normalized.startswith(("/v1/messages", "/v1/complete"))
                     or "anthropic-version" in headers or "x-api-key" in headers)
        provider = "anthropic" if anthropic else "openai"
    upstream = config.upstream_anthropic if provider == "anthropic" else config.upstream_openai
    return Route(provider, kind, upstream.rstrip("/"))
