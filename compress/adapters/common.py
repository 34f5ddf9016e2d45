"""Helpers shared by the provider adapters."""

from __future__ import annotations

from typing import Any

from compress.model import Block


def render_text_block(block: Block) -> Any:
    """A text block as a provider content part; `raw` is None for parts that were plain strings."""
    raw = block.raw
    if raw is None:
        return {"type": "text", "text": block.text}
    return raw if block.text == raw.get("text") else {**raw, "text": block.text}
