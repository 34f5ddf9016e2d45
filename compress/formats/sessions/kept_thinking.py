"""Whether a recorded host kept earlier turns' thinking in its requests, as the provider's usage
shows.

Anthropic drops the thinking of earlier turns once a person writes, unless the request asks it
to keep it (`context_management` edit `clear_thinking_20251015` with `keep: "all"`). Claude
Code decides per run behind a gate, so its version does not tell. The usage it records does:
when the thinking is dropped, the first call after a person's prompt reads from cache only what
came before the previous tool loop's first thinking block; when it is kept, it reads the
previous call's whole request. A replayed request must carry the same ask, or the replay and
the engine both assume a cache rewrite at every prompt that the host never paid for.

What must hold: only calls that can tell count (the previous call's request held thinking of
the loop the prompt ends, both calls' usage is recorded, the host had not compacted (its
requests then differ from the replayed ones), and the second came within the cache's
lifetime); the answer is the majority of them, None on a tie or when none can tell.
"""

from __future__ import annotations

from compress.formats.requests import SHAPES
from compress.formats.sessions.transcript import ModelCall, Transcript
from compress.model import Message, last_person_index
from compress.provider_cache import cache_life

WHOLE = 0.97
"""A call read the previous request whole when its cache read is at least this share of it."""


def host_kept_thinking(transcript: Transcript) -> bool | None:
    """Whether the host of an Anthropic-shaped recording kept earlier turns' thinking (None:
    the recording cannot tell; see the module docstring)."""
    if transcript.provider != "anthropic":
        return None
    lifetime = cache_life(transcript.provider, transcript.cache_ttl).seconds or 0.0
    parse = SHAPES[transcript.provider].parse_message
    messages = [parse(raw) for raw in transcript.messages]
    kept = dropped = 0
    for prev, call in zip(transcript.calls, transcript.calls[1:]):
        if _tells(messages, prev, call, lifetime):
            if call.usage.cache_read >= WHOLE * prev.usage.prompt_total:  # type: ignore[union-attr]
                kept += 1
            else:
                dropped += 1
    return None if kept == dropped else kept > dropped


def _tells(messages: list[Message], prev: ModelCall, call: ModelCall, lifetime: float) -> bool:
    if prev.usage is None or call.usage is None or call.after_host_compaction:
        return False
    if prev.at is None or call.at is None or call.at - prev.at >= lifetime:
        return False
    if not any(m.has_user_text for m in messages[prev.index:call.index]):
        return False
    loop = messages[max(0, last_person_index(messages[:prev.index])):prev.index]
    return any(m.role == "assistant" and m.has_thinking for m in loop)

