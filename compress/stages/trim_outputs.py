"""trim_outputs: cut long tool outputs down to what a model needs, per tool kind.

For each compressible tool_result (not a protected tool's, no marker yet):

- Image parts and base64 runs of at least `base64_min_chars` in the text are replaced by a
  marker with media type and size (`[ctxmill: image/png image, 103 KB base64 · deep_expand(…)]`).
- Text longer than `min_chars` is cut by kind (`compress.vocab.tools.tool_kind`, see
  `compress.trimming`): file reads keep head, definitions/imports/errors and tail; command
  output keeps head, tail and every error line with context; search results keep the first
  files and lines per file; file lists are grouped by directory with counts; subagent, web and
  other output keep head, headings, error lines and tail.

Budgets (lines) scale with pressure: outputs at least `old_after_turns` (0) turns older than the
epoch's anchor, i.e. every output outside the protected tail, get `tier_scale[tier]` of the
budget (and of `min_chars`); a file read that is read again, edited or written later ("stale")
gets `stale_scale` on top. An output is decided once, when it has left the protected tail and
an epoch re-decides it, and is then read from the provider's cache for the rest of the session,
so the scales are small. All knobs are stage
options (`config.options("trim_outputs")`, names as in `TrimOptions`). Every cut stores the
whole original in CCR first; a cut that saves less than the common rule keeps the original.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any, Mapping

import re

from ccr.markers import blob_cut, format_marker
from compress.config import options_as
from compress.lossy import accept
from compress.memo import TextMemo
from compress.model import IMAGE, TEXT, TOOL_USE, Block, Message
from compress.stage import Stage, StageContext, each_block
from compress.tiers import Tier
from compress.trimming import (Budget, Selection, cut_long_line, group_file_list, render, select_command,
                               select_file_read, select_prose, select_search)
from compress.vocab.calls import touched_files
from compress.vocab.tools import ToolKind, tool_kind
from ground.jsonbytes import dumps


@dataclass(frozen=True)
class TrimOptions:
    min_chars: int = 3_000
    head_lines: int = 40
    key_lines: int = 30
    tail_lines: int = 20
    command_head_lines: int = 15
    command_tail_lines: int = 40
    context_lines: int = 2
    max_line_chars: int = 400
    search_files: int = 20
    search_matches: int = 5
    list_dirs: int = 30
    list_names: int = 5
    base64_min_chars: int = 1_000
    old_after_turns: int = 0
    tier_scale: Mapping[str, float] = None  # type: ignore[assignment]
    stale_scale: float = 0.4

    def __post_init__(self) -> None:
        if self.tier_scale is None:
            object.__setattr__(self, "tier_scale", {"always": 0.15, "medium": 0.12, "high": 0.1})

    def scale(self, tier: Tier, age: int, stale: bool) -> float:
        scale = self.tier_scale.get(tier.label, 1.0) if age >= self.old_after_turns else 1.0
        return scale * (self.stale_scale if stale else 1.0)

    def budget(self, scale: float, kind: ToolKind) -> Budget:
        def lines(n: int, floor: int = 3) -> int:
            return max(floor, math.ceil(n * scale))

        command = kind is ToolKind.COMMAND
        return Budget(
            head=lines(self.command_head_lines if command else self.head_lines),
            key=lines(self.key_lines, 0),
            tail=lines(self.command_tail_lines if command else self.tail_lines),
            context=self.context_lines,
            max_line_chars=max(200, math.ceil(self.max_line_chars * min(1.0, scale * 2))),
            search_files=lines(self.search_files, 5),
            search_matches=lines(self.search_matches, 2),
            list_dirs=lines(self.list_dirs, 5),
            list_names=lines(self.list_names, 2),
        )


# -- stale file reads --------------------------------------------------------------------

def stale_reads(messages: list[Message]) -> set[str]:
    """Tool ids of file reads whose file a later call reads, edits, writes, moves or deletes
    (files as `compress.vocab.calls.touched_files` sees them: tools, shell commands, patches)."""
    later: set[str] = set()
    stale: set[str] = set()
    for msg in reversed(messages):
        for block in reversed(msg.blocks):
            if block.kind != TOOL_USE:
                continue
            touches = touched_files(block.tool_name, block.input)
            if tool_kind(block.tool_name, block.input) is ToolKind.FILE_READ and any(
                    t.action == "read" and t.path in later for t in touches):
                stale.add(block.tool_id)
            later.update(t.path for t in touches)
    return stale


# -- images and base64 -----------------------------------------------------------------

_MAGIC = (("iVBORw0KGgo", "image/png"), ("/9j/", "image/jpeg"), ("R0lGOD", "image/gif"),
          ("UklGR", "image/webp"), ("JVBERi", "application/pdf"), ("UEsDB", "application/zip"))


def _kb(chars: int) -> str:
    return f"{chars / 1024:,.0f} KB" if chars >= 1024 else f"{chars:,} chars"


def media_type(data: str, declared: str = "") -> str:
    if declared:
        return declared
    for prefix, kind in _MAGIC:
        if data.startswith(prefix):
            return kind
    return "binary"


@functools.lru_cache(maxsize=8)
def _base64_pattern(min_chars: int) -> re.Pattern:
    # starts only where a run starts (lookbehind), possessive: each character is scanned once
    return re.compile(r"(?:data:(?P<mt>[\w.+-]{1,60}/[\w.+-]{1,60});base64,)?(?<![A-Za-z0-9+/])"
                         r"(?P<run>[A-Za-z0-9+/]{%d,}+={0,2})" % min_chars)


_BASE64_CLASSES = bytes(ord("b") if chr(c).isascii() and (chr(c).isalnum() or chr(c) in "+/") else ord(" ")
                        for c in range(256))


def has_base64_run(text: str, min_chars: int) -> bool:
    """Whether `text` holds `min_chars` base64 characters in a row: the precondition of any
    `_base64_pattern` match, checked by C-level byte scans (UTF-8 bytes of non-ASCII characters
    are never base64 characters, so byte runs are character runs)."""
    if len(text) < min_chars:
        return False
    return b"b" * min_chars in text.encode("utf-8", "surrogatepass").translate(_BASE64_CLASSES)


def cut_base64(text: str, min_chars: int) -> tuple[str, int]:
    """Text with long base64 runs (mixed case and digits) replaced by inline notes."""
    if not has_base64_run(text, min_chars):
        return text, 0
    pattern = _base64_pattern(min_chars)
    count = 0

    def note(m: re.Match) -> str:
        nonlocal count
        run = m.group("run")
        if run.isdigit() or run.islower() or run.isupper() or not any(c.isdigit() for c in run[:4096]):
            return m.group()
        count += 1
        return blob_cut(media_type(run, m.group("mt") or ""), _kb(len(run)))

    out = pattern.sub(note, text)
    return out, count


def image_marker(part: Block, ctx: StageContext, hint: str | None = None) -> Block:
    """A text part with a marker in place of an image part (original part JSON in CCR)."""
    raw = part.raw if isinstance(part.raw, dict) else {}
    source = raw.get("source") if isinstance(raw.get("source"), dict) else {}
    data, declared = str(source.get("data", "")), str(source.get("media_type", ""))
    image_url = raw.get("image_url")
    url = str(image_url.get("url", "")) if isinstance(image_url, dict) else ""
    if url.startswith("data:"):  # OpenAI: data:image/png;base64,....
        declared, _, data = url[5:].partition(";base64,")
    original = dumps(raw).decode()
    kind = media_type(data, declared)
    size = len(data or url)

    def build(key: str) -> str:
        return format_marker(f"{kind} image, {_kb(size)} base64, omitted", key)

    text = ctx.lossy(original, build, hint=hint)
    if text == original:
        return part
    return Block(TEXT, raw={"type": "text", "text": text}, text=text)


# -- the stage -------------------------------------------------------------------------


def trim_text(text: str, kind: ToolKind, budget: Budget, key: str, path: str, base64_min: int,
              cut_lines: bool = True) -> str | None:
    """The trimmed text (markers carry `key`), or None when there is nothing to cut. With
    `cut_lines` off only base64 runs are cut."""
    text, blobs = cut_base64(text, base64_min)
    lines = text.split("\n")
    if not cut_lines:
        return f"{text}\n{format_marker(f'{blobs} base64 blob(s) cut', key)}" if blobs else None
    grouped = group_file_list(lines, budget) if kind is ToolKind.FILE_LIST else None
    if grouped is not None:
        body, summary = grouped
        return format_marker(summary, key) + "\n" + "\n".join(cut_long_line(x, budget.max_line_chars) for x in body)
    sel = _select(lines, kind, budget, text, path)
    if blobs:
        sel.summary += f"; {blobs} base64 blob{'s' if blobs > 1 else ''} cut"
    if len(sel.keep) == len(lines) and not blobs and all(len(x) <= budget.max_line_chars for x in lines):
        return None
    return render(lines, sel, key, budget.max_line_chars)


def _select(lines: list[str], kind: ToolKind, budget: Budget, text: str, path: str) -> Selection:
    if kind is ToolKind.FILE_READ:
        return select_file_read(lines, budget, path)
    if kind is ToolKind.SEARCH:
        grouped = select_search(lines, budget)
        if grouped is not None:
            return grouped
    if kind in (ToolKind.COMMAND, ToolKind.SEARCH, ToolKind.FILE_LIST):
        return select_command(lines, budget, text)
    return select_prose(lines, budget, text)


TRIMMED = TextMemo(max_chars=16_000_000, max_value_chars=1_000_000)
"""`trim_text` results (it is pure), by all its arguments but the text, whose CCR key is one of them."""


def _trimmed(text: str, kind: ToolKind, budget: Budget, key: str, *rest: Any) -> str | None:
    """`trim_text(text, kind, budget, key, *rest)` where `key` is the CCR key of `text`, remembered."""
    args = (kind, budget, key, *rest)
    return TRIMMED.get_or_compute(args, lambda: trim_text(text, *args))


def run(messages: list[Message], ctx: StageContext) -> list[Message]:
    opts = options_as(TrimOptions, ctx.config.options("trim_outputs"))
    inputs = {b.tool_id: b.input for m in messages for b in m.blocks if b.kind == TOOL_USE}
    stale = stale_reads(messages)

    def trim_block(msg: Message, block: Block) -> Block:
        if not ctx.may_compress_result(block):
            return block
        return _trim_block(block, msg, ctx, opts, inputs.get(block.tool_id), block.tool_id in stale)

    return each_block(messages, ctx, trim_block, "trimmed tool output")


def _trim_block(block: Block, msg: Message, ctx: StageContext, opts: TrimOptions,
                tool_input: Any, stale: bool) -> Block:
    kind = tool_kind(block.tool_name, tool_input)
    scale = opts.scale(ctx.tier, ctx.age(msg), stale)
    text = block.result_text
    over = len(text) > opts.min_chars * scale
    if over or (has_base64_run(text, opts.base64_min_chars) and _base64_pattern(opts.base64_min_chars).search(text)):
        budget = opts.budget(scale, kind)
        path = next((t.path for t in touched_files(block.tool_name, tool_input)), "")
        hint = ctx.rerun_hint(block)
        short = accept(ctx, text, lambda key: _trimmed(text, kind, budget, key, path, opts.base64_min_chars, over),
                       hint)
        block = block.with_result_text(short)
    if any(p.kind == IMAGE for p in block.parts):
        block = replace(block, parts=tuple(image_marker(p, ctx, ctx.rerun_hint(block)) if p.kind == IMAGE else p for p in block.parts))
    return block


STAGE = Stage("trim_outputs", run, Tier.ALWAYS)
