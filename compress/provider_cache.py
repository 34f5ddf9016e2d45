"""The provider's prompt cache as the engine prices it (Anthropic-style, on content blocks).

A request reads from cache the longest earlier request that is still an exact block prefix of
it and ends within its last `LOOKBACK_BLOCKS` content blocks, and writes the rest. Thinking
blocks count only in the assistant messages after the last message a person wrote: once a
person writes, the provider drops the thinking of the turns before. Prices are in units of the
base input price.
"""

from __future__ import annotations

from compress.model import REDACTED_THINKING, THINKING, Message, last_person_index

READ_PRICE = 0.1
WRITE_PRICE = 1.25
LOOKBACK_BLOCKS = 20


def sends_thinking(index: int, last_person: int) -> bool:
    """Whether the provider still sends the thinking blocks of message `index`, given the index
    of the last person-written message."""
    return index > last_person


def provider_blocks(messages: list[Message]) -> list[int]:
    """Content blocks of each message as the provider counts them for its cache lookback (at
    least one per message)."""
    last_person = last_person_index(messages)
    return [sum(1 for b in m.blocks if sends_thinking(i, last_person) or b.kind not in (THINKING, REDACTED_THINKING))
            or 1 for i, m in enumerate(messages)]


def first_dropped_thinking(messages: list[Message], sent: int) -> int:
    """First of the `sent` already-sent messages the provider now renders differently: when a
    new person-written message arrived, it drops the thinking of the assistant messages since
    the previous one (len(messages) if none)."""
    if last_person_index(messages) < sent:
        return len(messages)
    previous = last_person_index(messages[:sent])
    return next((i for i in range(previous + 1, sent) if messages[i].has_thinking), len(messages))
