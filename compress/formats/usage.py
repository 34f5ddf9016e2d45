"""Provider-reported token usage: one type for the proxy's responses and the recorded sessions.

`Usage.prompt_total` is the size of the request the provider saw (input + cache read + cache
write). `usage_of_event(provider, usage, event)` folds one response body or stream event into
`usage`; what each shape reports and where is its shape module's `usage_fields`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from compress.formats.requests import SHAPES


@dataclass(frozen=True, slots=True)
class Usage:
    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0

    @property
    def prompt_total(self) -> int:
        return self.input + self.cache_read + self.cache_write


def usage_of_event(provider: str, usage: Usage | None, event: Any) -> Usage | None:
    """`usage` updated with the fields one response body or stream event reports (None until
    an event holds a usage object)."""
    fields = SHAPES[provider].usage_fields(event) if isinstance(event, dict) else None
    return usage if fields is None else replace(usage or Usage(), **fields)
