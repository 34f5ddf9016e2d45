"""A recorded session as history rows: one `Row` per message, its text redacted.

Must hold: every string that reaches a row went through `ground.redact.redact` (text, tool
inputs, tool results, example commands); a row's text is at most `max_chars` (longer text keeps
its head and says how many characters were left out; only the head, and REDACT_MARGIN more,
is redacted); the same transcript gives the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from memory.history.steps import call_steps


@dataclass(frozen=True)
class Row:
    role: str
    text: str
    steps: tuple[tuple[str, str], ...] = ()
    """(step, the command or tool it came from, redacted), in call order (`memory.history.steps`)."""

    @property
    def digest(self) -> str:
        import xxhash

        return xxhash.xxh3_64_hexdigest(orjson.dumps([self.role, self.text]))


def _input_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def _block_text(block) -> str:
    from compress.model import IMAGE, TEXT, THINKING, TOOL_RESULT, TOOL_USE

    if block.kind == TEXT:
        return block.text
    if block.kind == THINKING:
        return "(thinking) " + block.text
    if block.kind == TOOL_USE:
        return f"[call {block.tool_name}] {_input_text(block.input)}"
    if block.kind == TOOL_RESULT:
        return f"[result {block.tool_name}{' error' if block.is_error else ''}] {block.result_text}"
    return "[image]" if block.kind == IMAGE else ""  # redacted thinking and unknown blocks: nothing readable


REDACT_MARGIN = 64 * 1024
"""Characters past `max_chars` redaction still sees, so a secret that starts in the kept head
and runs past it (a private key block) is found whole."""


def _kept(text: str, max_chars: int, clean) -> str:
    """`clean(text)` cut to `max_chars` with a note of what was left out: only the head (and
    REDACT_MARGIN more) is redacted, so a huge tool output costs its head, not its length."""
    if len(text) <= max_chars:
        return clean(text)
    head = clean(text[: max_chars + REDACT_MARGIN])
    note = f"\n[… {len(text) - max_chars:,} more characters not kept in history]"
    return head[:max_chars] + note


def rows_of(transcript, redact_extra=(), redact_allow=(), max_chars: int = 32_000) -> list[Row]:
    """The rows of a `compress.formats.sessions.Transcript`, in order (empty messages skipped)."""
    from compress.formats.requests import from_provider
    from compress.model import TOOL_USE
    from compress.vocab.tools import command_of
    from ground.redact import redact

    def clean(text: str) -> str:
        return redact(text, redact_extra, redact_allow)

    request = from_provider(transcript.whole(), transcript.provider)
    rows = []
    for message in request.messages:
        text = "\n".join(t for t in (_block_text(b) for b in message.blocks) if t)
        if not text.strip():
            continue
        steps = []
        for block in message.blocks:
            if block.kind == TOOL_USE:
                example = command_of(block.input) or block.tool_name
                steps += [(step, clean(example[:300])) for step in call_steps(block.tool_name, block.input)]
        rows.append(Row(message.role, _kept(text, max_chars, clean), tuple(steps)))
    return rows
