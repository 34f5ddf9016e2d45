"""Input tokens of canonical messages, as the pipeline and the replay count them.

A message costs `MESSAGE_OVERHEAD` plus its blocks; system and unknown messages cost their
JSON. `MessageTokens` counts each block and message object once per run (they are immutable)
and each long text once per str object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compress.model import IMAGE, REDACTED_THINKING, TEXT, THINKING, TOOL_RESULT, TOOL_USE, Block, Message
from compress.stagekit.memo import PerObject
from ground.jsonbytes import dumps

IMAGE_TOKENS = 1_600
"""Tokens charged for an image block (a ~1.2 megapixel image at width*height/750)."""

MESSAGE_OVERHEAD = 4
"""Tokens charged per message besides its blocks."""


def block_tokens(b: Block, count: Callable[[str], int]) -> int:
    """Input tokens of one block."""
    if b.kind in (TEXT, THINKING):
        return count(b.text)
    if b.kind == TOOL_USE:
        value = b.input if isinstance(b.input, str) else dumps(b.input).decode()
        return 8 + count(b.tool_name) + count(value)
    if b.kind == TOOL_RESULT:
        return 4 + sum(block_tokens(p, count) for p in b.parts)
    if b.kind == IMAGE:
        return IMAGE_TOKENS
    if b.kind == REDACTED_THINKING:  # opaque: Anthropic's `data`, a Responses reasoning item's ciphertext
        raw = b.raw if isinstance(b.raw, dict) else {}
        return len(str(raw.get("data") or raw.get("encrypted_content") or "")) // 4
    return count(dumps(b.raw).decode())


class CountOnce:
    """`count(text)`, remembered per str object for long texts: a run counts the same original
    in several places (its block, then a stage's saving rule)."""

    LONG = 2_048

    def __init__(self, count: Callable[[str], int]) -> None:
        self._count = count
        self._long = PerObject(count)

    def __call__(self, text: str) -> int:
        return self._count(text) if len(text) < self.LONG else self._long(text)


class MessageTokens:
    """The token counts of one run, each block and message counted once; `count` is the text
    counter the stages share."""

    def __init__(self, count: Callable[[str], int]) -> None:
        self.count = CountOnce(count)
        self.block: PerObject[Block, int] = PerObject(lambda b: block_tokens(b, self.count))
        self.message: PerObject[Message, int] = PerObject(self._message)

    def _message(self, msg: Message) -> int:
        if msg.role in ("system", "other"):
            return MESSAGE_OVERHEAD + self.count(dumps(msg.raw).decode())
        return MESSAGE_OVERHEAD + sum(self.block(b) for b in msg.blocks)

    def compressible(self, msg: Message) -> int:
        """Tokens in blocks some stage could shorten once the message is old."""
        n = 0
        for b in msg.blocks:
            if b.kind in (THINKING, REDACTED_THINKING, TOOL_RESULT) or (b.kind == TEXT and msg.role == "assistant"):
                n += self.block(b)
            elif b.kind == TOOL_USE:
                n += max(0, self.block(b) - 250)
        return n

    def head(self, body: dict[str, Any], fields: tuple[str, ...]) -> int:
        """Tokens of the request's system prompt and tool definitions (its shape's `HEAD_FIELDS`)."""
        return sum(self.count(dumps(body[k]).decode()) for k in fields if k in body)
