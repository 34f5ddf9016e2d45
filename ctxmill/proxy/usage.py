"""Provider-reported token usage, read from responses as they stream past.

`Usage.prompt_total` is the size of the request the provider saw: Anthropic
input + cache_read + cache_creation tokens; OpenAI prompt_tokens (which already includes
`prompt_tokens_details.cached_tokens`, reported here as cache_read). OpenAI reports no cache
writes. `UsageTap` watches the response bytes without holding them: for SSE it keeps only the
current unfinished line and parses just the `data:` lines that mention "usage" (Anthropic
`message_start` / `message_delta`, OpenAI's final chunk when the client asked for
`stream_options.include_usage`); for JSON it keeps the body up to `JSON_LIMIT` bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

JSON_LIMIT = 8 * 2**20
LINE_LIMIT = 1 * 2**20


@dataclass
class Usage:
    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0

    @property
    def prompt_total(self) -> int:
        return self.input + self.cache_read + self.cache_write


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def merge_usage(provider: str, usage: Usage | None, raw: Any) -> Usage | None:
    """`usage` updated with the fields present in one provider usage object."""
    if not isinstance(raw, dict):
        return usage
    out = usage or Usage()
    if provider == "anthropic":
        fields = {"input": "input_tokens", "cache_read": "cache_read_input_tokens",
                  "cache_write": "cache_creation_input_tokens", "output": "output_tokens"}
        for attr, name in fields.items():
            if (n := _int(raw.get(name))) is not None:
                setattr(out, attr, n)
        return out
    prompt = _int(raw.get("prompt_tokens"))
    details = raw.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else None
    if prompt is not None:
        out.cache_read = min(cached or 0, prompt)
        out.input = prompt - out.cache_read
    if (n := _int(raw.get("completion_tokens"))) is not None:
        out.output = n
    return out


def usage_of_event(provider: str, usage: Usage | None, event: Any) -> Usage | None:
    """Fold one parsed JSON body or SSE event into `usage`."""
    if not isinstance(event, dict):
        return usage
    if provider == "anthropic" and isinstance(event.get("message"), dict):  # message_start
        usage = merge_usage(provider, usage, event["message"].get("usage"))
    return merge_usage(provider, usage, event.get("usage"))


class UsageTap:
    def __init__(self, provider: str, event_stream: bool) -> None:
        self.provider = provider
        self.event_stream = event_stream
        self.usage: Usage | None = None
        self._partial = b""
        self._body: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> None:
        if not self.event_stream:
            self._size += len(chunk)
            if self._size <= JSON_LIMIT:
                self._body.append(chunk)
            return
        if b"\n" not in chunk:
            self._partial = (self._partial + chunk) if len(self._partial) < LINE_LIMIT else b""
            return
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            if line.startswith(b"data:") and b'"usage"' in line:
                self._event(line[5:])

    def _event(self, data: bytes) -> None:
        try:
            event = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        self.usage = usage_of_event(self.provider, self.usage, event)

    def finish(self) -> Usage | None:
        if self.event_stream:
            if self._partial.startswith(b"data:") and b'"usage"' in self._partial:
                self._event(self._partial[5:])
        elif self._body and self._size <= JSON_LIMIT:
            self._event(b"".join(self._body))
        self._partial, self._body = b"", []
        return self.usage
