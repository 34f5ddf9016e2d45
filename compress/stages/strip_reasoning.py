"""strip_reasoning: drop the reasoning of completed older assistant turns.

Removes thinking / redacted_thinking blocks and inline `<thinking>…</thinking>` /
`<think>…</think>` segments from assistant messages that come before the latest message a
person wrote (a completed turn). The provider ignores old thinking blocks anyway, so nothing
the model can see is lost and no marker is added. A request that keeps all thinking
(`ctx.thinking_kept`, Claude Code 2.1's `clear_thinking` edit with `keep: "all"`) does show old
thinking to the model: removing it then saves those tokens in every later request but rewrites
the cache after it, so it happens only where the runner re-decides messages, at an epoch that
pays for the rewrite (thinking counts as compressible there); between epochs those messages are
frozen. Signed thinking cannot be shortened, only dropped whole. Never touches the current turn,
and never leaves an assistant message with no content.
"""

from __future__ import annotations

from compress.model import REDACTED_THINKING, TEXT, THINKING, Message, last_person_index
from compress.stagekit.stage import Stage, StageContext, each_mutable
from compress.tiers import Tier

TAGS = ("thinking", "think")


def strip_inline_reasoning(text: str) -> str:
    """Text without closed `<think>`/`<thinking>` segments; linear time, unclosed tags kept."""
    if "<think" not in text:
        return text
    out: list[str] = []
    pos = 0
    while True:
        found = [(text.find(f"<{t}>", pos), t) for t in TAGS]
        found = [(i, t) for i, t in found if i >= 0]
        if not found:
            break
        start, tag = min(found)
        end = text.find(f"</{tag}>", start)
        if end < 0:
            break
        out.append(text[pos:start])
        pos = end + len(tag) + 3
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
    out.append(text[pos:])
    return "".join(out)


def _strip(msg: Message) -> Message:
    blocks = []
    for block in msg.blocks:
        if block.kind in (THINKING, REDACTED_THINKING):
            continue
        if block.kind == TEXT:
            block = block.with_text(strip_inline_reasoning(block.text))
        blocks.append(block)
    if not any(b.kind != TEXT or b.text for b in blocks):
        return msg
    return msg.with_blocks(blocks)


def run(messages: list[Message], ctx: StageContext) -> list[Message]:
    last_person = last_person_index(messages)

    def strip(i: int, msg: Message) -> Message:
        if msg.role != "assistant" or i >= last_person:
            return msg
        out = _strip(msg)
        if out is not msg:
            ctx.note(i, "removed reasoning of a completed turn")
        return out

    return each_mutable(messages, ctx, strip)


STAGE = Stage("strip_reasoning", run, Tier.ALWAYS)
