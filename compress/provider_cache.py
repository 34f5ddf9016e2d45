"""The provider's prompt cache as the engine prices it (Anthropic-style, on content blocks).

A request reads from cache the longest earlier request that is still an exact block prefix of
it and ends within its last `LOOKBACK_BLOCKS` content blocks, and writes the rest. Thinking
blocks count only in the assistant messages after the last message a person wrote: once a
person writes, the provider drops the thinking of the turns before. A request that keeps all
thinking (`thinking_kept`: Anthropic's `clear_thinking_20251015` edit with `keep: "all"`, sent
by Claude Code 2.1) has every thinking block read and cached like any other block, and nothing
is dropped when a person writes. Prices are in units of the base input price.
"""

from __future__ import annotations

from compress.model import REDACTED_THINKING, THINKING, Message, last_person_index

READ_PRICE = 0.1
WRITE_PRICE = 1.25
LOOKBACK_BLOCKS = 20


def sends_thinking(index: int, last_person: int, thinking_kept: bool = False) -> bool:
    """Whether the provider still sends the thinking blocks of message `index`, given the index
    of the last person-written message."""
    return thinking_kept or index > last_person


def provider_blocks(messages: list[Message], thinking_kept: bool = False) -> list[int]:
    """Content blocks of each message as the provider counts them for its cache lookback (at
    least one per message)."""
    last_person = last_person_index(messages)
    return [sum(1 for b in m.blocks
                if sends_thinking(i, last_person, thinking_kept) or b.kind not in (THINKING, REDACTED_THINKING))
            or 1 for i, m in enumerate(messages)]


def first_dropped_thinking(messages: list[Message], sent: int, thinking_kept: bool = False) -> int:
    """First of the `sent` already-sent messages the provider now renders differently: when a
    new person-written message arrived, it drops the thinking of the assistant messages since
    the previous one (len(messages) if none, and always when the request keeps all thinking)."""
    if thinking_kept or last_person_index(messages) < sent:
        return len(messages)
    previous = last_person_index(messages[:sent])
    return next((i for i in range(previous + 1, sent) if messages[i].has_thinking), len(messages))
