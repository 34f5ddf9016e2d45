"""compress_prose: condense old, long assistant prose to the lines that carry information.

An assistant text block longer than `min_chars` (500) outside the protected tail keeps:
headings, list items and table rows, fenced code blocks (whole, byte for byte, an unclosed
fence keeps the rest of the text), lines that are wholly bold, and from plain paragraphs the
sentences that mention an error (`compress.vocab.signals.errors.is_error_line`), a path, or a
decision, constraint or fix (`compress.vocab.signals.cues.decision_kinds`, English and Chinese
cues), plus the sentence that introduces a list (ends with a colon right before it). Other
sentences are filler and are dropped. Sentences end at `.!?…` followed by a space or the line end, and right after
Chinese `。！？；`.

Must hold: the result is accepted only if it saves at least `min_saving` (0.40) of the
characters and the common rule (`StageContext.lossy`), so the output is never larger; the
original goes to CCR first and a marker at the end says what was kept and how many sentences
were dropped; text that already holds a ctxmill marker is left alone (idempotent).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import regex

from ccr.markers import format_marker, has_marker
from compress.config import options_as
from compress.model import TEXT, Block, Message
from compress.stagekit.stage import Stage, StageContext, each_block
from compress.tiers import Tier
from compress.vocab.signals.cues import decision_kinds, mentions_path
from compress.vocab.signals.errors import is_error_line

MIN_CHARS = 500
MIN_SAVING = 0.40


@dataclass(frozen=True)
class ProseOptions:
    min_chars: int = MIN_CHARS
    min_saving: float = MIN_SAVING

_FENCE = regex.compile(r"^[ \t]{0,3}(`{3,}(?![^\n]*`)|~{3,})")
"""A fence opener as CommonMark reads it: the info string after backticks holds no backtick
(a line like ``` ``` ``` is inline code, not a fence)."""
_HEADING = regex.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]|\*\*[^*\n]+\*\*[:：。.!！]?[ \t]*$)")
"""Markdown headings and lines that are wholly bold (used as headings or conclusions)."""
_STRUCTURED = regex.compile(r"^\s*(?:(?:[-*+•]|\d{1,3}[.)])(?:\s|$)|\d{1,3}、|\|)")
"""List items (`-`, `*`, `1.`, `1)`, Chinese `1、`) and table rows."""
_SENTENCE = regex.compile(r"[^\n]*?(?:[.!?…]+(?=\s|$)|[。！？；]+|$)\s*")


@dataclass(frozen=True, slots=True)
class Condensed:
    text: str
    kept: Counter
    dropped: int

    def summary(self) -> str:
        parts = [_count(self.kept[k], k) for k in ("heading", "list item", "code block", "key sentence") if self.kept[k]]
        kept = ", ".join(parts) or "nothing"
        return f"prose condensed: kept {kept}; dropped {_count(self.dropped, 'sentence')}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def split_sentences(line: str) -> list[str]:
    """The sentences of one line, each with its trailing whitespace; they join back to `line`."""
    return [m.group() for m in _SENTENCE.finditer(line) if m.group()]


def is_key_sentence(sentence: str) -> bool:
    return is_error_line(sentence) or mentions_path(sentence) or bool(decision_kinds(sentence))


def condense(text: str) -> Condensed:
    """The informative lines of `text` (see the module docstring) and what was kept/dropped."""
    out: list[str] = []
    kept: Counter = Counter()
    dropped = 0
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            end = _fence_end(lines, i, fence.group(1))
            out.extend(lines[i:end])
            kept["code block"] += 1
            i = end
            continue
        i += 1
        if not line.strip():
            if out and out[-1].strip():
                out.append("")
            continue
        if _HEADING.match(line) or _STRUCTURED.match(line):
            out.append(line)
            kept["heading" if _HEADING.match(line) else "list item"] += 1
            continue
        sentences = split_sentences(line)
        lead_in = _introduces_list(lines, i)
        keep = [s for j, s in enumerate(sentences)
                if is_key_sentence(s) or (lead_in and j == len(sentences) - 1)]
        dropped += len(sentences) - len(keep)
        kept["key sentence"] += len(keep)
        if keep:
            out.append("".join(keep).rstrip())
    while out and not out[-1].strip():
        out.pop()
    return Condensed("\n".join(out), kept, dropped)


def _introduces_list(lines: list[str], after: int) -> bool:
    """The line before `after` ends with a colon and the next non-blank line is a list item."""
    if not lines[after - 1].rstrip().endswith((":", "：")):
        return False
    following = next((line for line in lines[after:] if line.strip()), "")
    return _STRUCTURED.match(following) is not None


def _fence_end(lines: list[str], start: int, fence: str) -> int:
    """Index after the line closing the fence opened at `start` (len(lines) if unclosed)."""
    closing = regex.compile(rf"^[ \t]{{0,3}}{regex.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
    for j in range(start + 1, len(lines)):
        if closing.match(lines[j]):
            return j + 1
    return len(lines)


def shorten(text: str, ctx: StageContext, min_chars: int = MIN_CHARS, min_saving: float = MIN_SAVING) -> str:
    """`text` condensed with its original in CCR, or `text` itself when that does not pay."""
    if len(text) <= min_chars or has_marker(text):
        return text
    condensed = condense(text)
    if not condensed.dropped:
        return text
    body = f"{condensed.text}\n" if condensed.text else ""
    summary = condensed.summary()
    return ctx.lossy(text, lambda key: body + format_marker(summary, key), hint=None,
                     min_fraction=min_saving)


def run(messages: list[Message], ctx: StageContext) -> list[Message]:
    opts = options_as(ProseOptions, ctx.config.options("compress_prose"))
    min_chars, min_saving = opts.min_chars, opts.min_saving

    def compress(msg: Message, block: Block) -> Block:
        if msg.role != "assistant" or block.kind != TEXT:
            return block
        return block.with_text(shorten(block.text, ctx, min_chars, min_saving))

    return each_block(messages, ctx, compress, "condensed old assistant prose")


STAGE = Stage("compress_prose", run, Tier.MEDIUM, options=ProseOptions)
