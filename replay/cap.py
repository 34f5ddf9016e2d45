"""The decide-once cap: the baseline every compression change must beat.

Every tool result longer than `LIMIT` characters keeps its first and last `KEEP` characters
with a one-line note between, decided when it arrives and never changed, so the request stays
append-only and the provider's prompt cache always hits. It is ten lines of logic; it stores
nothing, so what it cuts is gone for the agent.
"""

from __future__ import annotations

from typing import Any

from compress.formats.requests import SHAPES
from compress.model import TOOL_RESULT, Block
from compress.stagekit.memo import PerObject

LIMIT = 2_000
KEEP = 1_000


def capped_text(text: str) -> str:
    if len(text) <= LIMIT:
        return text
    return f"{text[:KEEP]}\n[… {len(text) - 2 * KEEP:,} characters cut …]\n{text[-KEEP:]}"


def _capped_block(block: Block) -> Block:
    return block.with_result_text(capped_text(block.result_text)) if block.kind == TOOL_RESULT else block


class DecideOnceCap:
    """Body -> capped body for one provider shape; each message is decided once (by object)."""

    def __init__(self, provider: str) -> None:
        shape = SHAPES[provider]
        self.field = shape.MESSAGES_FIELD

        def cap(raw: Any) -> Any:
            msg = shape.parse_message(raw)
            capped = msg.with_blocks(_capped_block(b) for b in msg.blocks)
            return raw if capped is msg else shape.render_message(capped)

        self._message = PerObject(cap)

    def __call__(self, body: dict) -> dict:
        return {**body, self.field: [self._message(m) for m in body[self.field]]}
