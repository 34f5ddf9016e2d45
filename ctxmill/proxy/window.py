"""The context window a proxied request runs in, from what its client sends.

Must hold: this is the one place the proxy decides a request's window (the tiers scale with it,
`compress.tiers.TierThresholds.for_window`), and it takes it only from the request itself: 1M
tokens when `anthropic-beta` names the long-context beta (`context-1m-2025-08-07`, which Claude
Code 2.1 always sends); the window the client gives the model (`compress.tiers.CLIENT_WINDOWS`)
when its `originator` header names the client (Codex 0.171 sends `codex_exec`, `codex_tui` or
`codex_vscode`, and no window); else None, and the model table decides
(`compress.tiers.known_window`). The model is read from the body's first bytes, where Codex puts
it (`{"model":"gpt-5.6-sol",…`); a body that does not start so gets the table's window. Reads at
most `MODEL_SCAN` bytes, never parses the body, never raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from compress.tiers import NATIVE_1M, known_window

LONG_CONTEXT_BETA = "context-1m"
CLIENTS_BY_ORIGINATOR = (("codex", "codex"),)
"""(`originator` header prefix, lower-cased; client of `compress.tiers.CLIENT_WINDOWS`)."""
MODEL_SCAN = 256
_LEADING_MODEL = re.compile(rb'\s*\{\s*"model"\s*:\s*"([^"\\]{1,120})"')


def declared_context_window(headers: Iterable[tuple[str, str]], raw: bytes = b"") -> int | None:
    """The context window the request declares (its headers, and for a named client its body's
    leading model), else None (unknown: the tiers follow the model table)."""
    client = None
    for name, value in headers:
        low = name.lower()
        if low == "anthropic-beta" and any(t.strip().startswith(LONG_CONTEXT_BETA) for t in value.split(",")):
            return NATIVE_1M
        if low == "originator":
            client = next((c for prefix, c in CLIENTS_BY_ORIGINATOR if value.strip().lower().startswith(prefix)), None)
    if client is None or not (found := _LEADING_MODEL.match(raw[:MODEL_SCAN])):
        return None
    return known_window(found.group(1).decode("utf-8", "replace"), client)
