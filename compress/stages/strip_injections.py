"""strip_injections: remove host-injected segments from old tool results and assistant text.

Hosts inject reminders such as `<system-reminder>…</system-reminder>` into tool results;
once old they only cost tokens. Each closed segment of an injected tag (stage option `tags`,
default `compress.vocab.injections.REMINDER_TAGS`: `system-reminder`) is removed, the rest of
the block kept; the original goes to CCR and a marker says what was removed. Injected text is
not content, so the relative part of the common saving rule does not apply, and the absolute
part is the stage option `min_saving_chars` (default 100): the same reminder recurs in every
result, and each removal nets ~40 tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from ccr.markers import format_marker
from compress.config import options_as
from compress.model import TEXT, Block, Message
from compress.stagekit.stage import INJECTION_SUMMARY_PREFIX, Stage, StageContext, each_block
from compress.tiers import Tier
from compress.vocab.injections import REMINDER_TAGS, remove_segments

DEFAULT_MIN_SAVING_CHARS = 100


@dataclass(frozen=True)
class InjectionOptions:
    tags: tuple[str, ...] = REMINDER_TAGS
    min_saving_chars: int = DEFAULT_MIN_SAVING_CHARS


def _shorten(text: str, tags: tuple[str, ...], min_chars: int, ctx: StageContext) -> str:
    stripped, removed = remove_segments(text, tags)
    if not removed:
        return text
    stripped = stripped.strip("\n")
    summary = f"{INJECTION_SUMMARY_PREFIX}{'/'.join(tags)}" + (f" ×{removed}" if removed > 1 else "")
    return ctx.lossy(text, lambda key: f"{stripped}\n{format_marker(summary, key)}", relative=False,
                     min_chars=min_chars)


def run(messages: list[Message], ctx: StageContext) -> list[Message]:
    opts = options_as(InjectionOptions, ctx.config.options("strip_injections"))
    tags, min_chars = tuple(opts.tags), opts.min_saving_chars

    def strip(msg: Message, block: Block) -> Block:
        if ctx.may_compress_result(block):
            return block.with_result_text(_shorten(block.result_text, tags, min_chars, ctx))
        if block.kind == TEXT and msg.role == "assistant":
            return block.with_text(_shorten(block.text, tags, min_chars, ctx))
        return block

    return each_block(messages, ctx, strip, "removed injected segments")


STAGE = Stage("strip_injections", run, Tier.ALWAYS, options=InjectionOptions)
