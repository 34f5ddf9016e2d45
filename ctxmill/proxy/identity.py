"""Session identity: which stored session a request continues.

key = xxh3_128 of (provider, client id, system prompt, first user message), where the client id
is Anthropic `metadata.user_id` (Claude Code sends one per conversation) or OpenAI
`prompt_cache_key` / `safety_identifier` / `user`, and "" when absent. The system prompt and first
user message are always part of the key: side requests (title generation, sub-agents) share
Claude Code's `user_id` but not its conversation, and a changed system prompt invalidates the
provider's prompt cache anyway, so starting a new session then costs nothing.
"""

from __future__ import annotations

from typing import Any

import xxhash

from compress.jsonbytes import dumps

_OPENAI_ID_FIELDS = ("prompt_cache_key", "safety_identifier", "user")


def client_id(provider: str, body: dict) -> str:
    if provider == "anthropic":
        metadata = body.get("metadata")
        value = metadata.get("user_id") if isinstance(metadata, dict) else None
        return value if isinstance(value, str) else ""
    for name in _OPENAI_ID_FIELDS:
        if isinstance(body.get(name), str):
            return body[name]
    return ""


def _system_and_first_user(provider: str, body: dict) -> tuple[Any, Any]:
    messages = body.get("messages") or []
    first_user = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
    if provider == "anthropic":
        return body.get("system"), first_user
    system = [m for m in messages if isinstance(m, dict) and m.get("role") in ("system", "developer")]
    return system, first_user


def session_key(provider: str, body: dict) -> str:
    """32 hex characters; equal for every request of one conversation."""
    system, first_user = _system_and_first_user(provider, body)
    return xxhash.xxh3_128(dumps([provider, client_id(provider, body), system, first_user])).hexdigest()
