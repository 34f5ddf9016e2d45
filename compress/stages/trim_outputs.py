"""trim_outputs: cut long tool outputs down to what a model needs, per tool kind.

For each compressible tool_result (not a protected tool's, no cutting marker yet; a read whose
line numbers decide_on_arrival thinned is still one):

- Image parts and base64 runs of at least `base64_min_chars` in the text are replaced by a
  marker with media type and size (`[ctxmill: image/png image, 103 KB base64 · deep_expand(…)]`).
- Text longer than `min_chars` is cut by kind (`compress.vocab.tools.tool_kind`, see
  `compress.stagekit.kept_lines`): file reads keep head, definitions/imports/errors and tail; command
  output keeps head, tail and every error line with context; search results keep the first
  files and lines per file; file lists are grouped by directory with counts; subagent, web and
  other output keep head, headings, error lines and tail.

Must hold (the only-copy rule): below `unshown_tier` (the high tier: the host compacts soon), a
file read that is not stale (below: no later message shows its lines again) leaves this stage with
its text byte for byte, however old, cold, committed or far from source code it is, and whatever
the request times; only its image parts may become markers, and a line longer than
`fresh_max_line_chars` (minified code) makes it ordinary output. At the high tier a read of
source code that is neither stale nor cold (below) still stays whole: it is the agent's copy of a
file it may be working on (`keep_fresh_reads`; off, every read is cut like other output). And
a subagent's report is kept whole only while it is the newest thing the agent works on
(`moved_on`): younger than `report_fresh_turns` turns, and until a call in a later turn touches
a file (the agent acts on a report in the turns after it, then works on files); then it is cut
like other long output, the original in CCR. Budgets
(lines) scale with pressure: outputs at least `old_after_turns` (0) turns older than the
epoch's anchor, i.e. every output outside the protected tail, get `tier_scale[tier]` of the
budget (and of `min_chars`); a file read that is read again, written whole, moved or deleted
later so that later messages show its lines again ("stale", `stale_reads`; a read of another range
of the file does not) gets `stale_scale` on top, a read of a file that is not source
code `non_source_scale`, and a read whose file was not changed soon after it ("cold",
`cold_reads`; or, with `cold_since` "last_change", whose file was left alone that long,
`idle_reads`; or made before a successful `git commit`, `committed_reads`) `cold_scale`. An
output is decided when it has left the protected tail and an epoch re-decides it, and is then
read from the provider's cache until a later epoch reaches it again. All knobs are stage
options (`config.options("trim_outputs")`, names as in `TrimOptions`). Every cut stores the
whole original in CCR first (for a thinned read, the read
the thinning stored); a cut that saves less than the common rule keeps the original.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any

from ccr.markers import format_marker
from compress.config import options_as
from compress.model import IMAGE, TEXT, TOOL_RESULT, TOOL_USE, Block, Message
from compress.stagekit.line_numbers import content_chars, thinning_key
from compress.stagekit.lossy import accept
from compress.stagekit.output_cut import TrimOptions, base64_pattern, has_base64_run, kb, media_type, trimmed
from compress.stagekit.shown_again import SHOWN_AGAIN, copy_lines, later_touches, shown_again_at, written_lines
from compress.stagekit.stage import Stage, StageContext, each_block
from compress.tiers import Tier
from compress.vocab.calls import first_path, touched_files
from compress.vocab.commands import commits
from compress.vocab.files import is_source
from compress.vocab.polls import polled_calls, resolved
from compress.vocab.signals.errors import is_failed_result
from compress.vocab.signals.rereads import pointer_reads
from compress.vocab.tools import ToolKind, command_of, is_subagent, tool_kind
from compress.vocab.touches import CHANGES, READ, FileTouch
from ground.jsonbytes import dumps

# -- stale file reads --------------------------------------------------------------------

def stale_reads(messages: list[Message]) -> set[str]:
    """Tool ids of file reads whose lines later messages show again (`compress.stagekit.shown_again`,
    the test `supersede_inputs` asks of bodies): later reads of the file (files as
    `compress.vocab.calls.touched_files` sees them: tools, shell commands, patches) show
    `READS_SHOW` of the read's lines, or a whole write or a deletion leaves none of them in the file.
    Ranges count: `sed -n '320,860p' f` does not show what `sed -n '1,320p' f` did. A later edit
    alone does not: the agent copies the lines it replaces out of the read; nor a move (the lines
    live on at the new path), nor a re-read the host answers with a pointer back to the earlier
    read (`compress.vocab.signals.rereads`): it shows no line of the file."""
    pointers = pointer_reads(messages)
    results = {b.tool_id: b.result_text for m in messages for b in m.blocks if b.kind == TOOL_RESULT}
    timeline = [(block, touched_files(block.tool_name, block.input)) for msg in messages for block in msg.blocks
                if block.kind == TOOL_USE and block.tool_id not in pointers]
    later = later_touches([touches for _, touches in timeline])
    lines: dict[tuple[int, bool], frozenset[str]] = {}

    def lines_of(pos: int, touch: FileTouch) -> frozenset[str]:
        key = (pos, touch.action == READ)
        if key not in lines:
            block = timeline[pos][0]
            lines[key] = (copy_lines(results.get(block.tool_id, ""), True) if key[1]
                          else written_lines(block.tool_name, block.input))
        return lines[key]

    stale: set[str] = set()
    for pos, (block, touches) in enumerate(timeline):
        paths = list(dict.fromkeys(t.path for t in touches if t.action == READ))
        if not paths or tool_kind(block.tool_name, block.input) is not ToolKind.FILE_READ:
            continue
        showing = [[(p, t) for p, t in later(pos, path) if t.action in SHOWN_AGAIN] for path in paths]
        if all(showing) and shown_again_at(lines_of(pos, FileTouch(paths[0], READ)), showing, lines_of) is not None:
            stale.add(block.tool_id)
    return stale


def idle_reads(messages: list[Message], turns: int, anchor_turn: int, ref_chars: int = 0,
               ref_changed: bool = True) -> set[str]:
    """Tool ids of file reads whose file neither that read nor any change (write, edit, move,
    delete) touched in the last `turns` assistant turns up to `anchor_turn`: the file was left
    alone, however soon after the read it was changed. A read longer than `ref_chars` (0: no
    such read) waits proportionally fewer turns (`cold_turns`), unless `ref_changed` is false
    and its file was changed before it (`worked_reads`). `turns` 0: none."""
    if turns <= 0:
        return set()
    reads, changed = _reads_and_changes(messages, anchor_turn)
    limit = cold_turns(messages, turns, ref_chars, () if ref_changed else worked_reads(reads, changed))
    return {tool_id for tool_id, paths, turn in reads
            if anchor_turn - max([turn, *(changed[p][-1] for p in paths if changed[p])]) >= limit(tool_id)}


def _reads_and_changes(messages: list[Message], until: int | None = None
                       ) -> tuple[list[tuple[str, list[str], int]], dict[str, list[int]]]:
    """(tool id, paths read, turn) of every file read, and the turns each file was changed in
    (written, edited, moved, deleted), in order; messages after turn `until` (None: none) left out.
    A re-read the host answers with a pointer back to the earlier read (`pointer_reads`) is not
    listed: it renews the earlier reads of its file (their turn becomes its turn), which the agent
    is using again."""
    pointers = pointer_reads(messages)
    changed: dict[str, list[int]] = defaultdict(list)
    reads: list[tuple[str, list[str], int]] = []
    for msg in messages:
        if until is not None and msg.turn > until:
            break
        for block in msg.blocks:
            if block.kind != TOOL_USE:
                continue
            touches = touched_files(block.tool_name, block.input)
            for touch in touches:
                if touch.action in CHANGES:
                    changed[touch.path].append(msg.turn)
            if tool_kind(block.tool_name, block.input) is ToolKind.FILE_READ:
                paths = [t.path for t in touches if t.action == READ]
                if block.tool_id in pointers:
                    reads = [(tid, ps, msg.turn if set(ps) & set(paths) else turn) for tid, ps, turn in reads]
                else:
                    reads.append((block.tool_id, paths, msg.turn))
    return reads, changed


MIN_COLD_TURNS = 3


def cold_turns(messages: list[Message], turns: int, ref_chars: int,
               full: Collection[str] = ()) -> Callable[[str], int]:
    """Turns a read waits before it can go cold, by tool id: `turns`, or for a read of n >
    `ref_chars` characters of the file (`content_chars`: line-number prefixes, which differ by
    client, do not count) `turns × ref_chars / n` (at least `MIN_COLD_TURNS`), unless its tool
    id is in `full`. Of the corpus's file reads, those over 20,000 characters carry a fifth of
    what reads cost to keep and a fourteenth of the lines later copied into edits: an edit
    copies a few lines of a big file."""
    if ref_chars <= 0:
        return lambda tool_id: turns
    results = {b.tool_id: b for m in messages for b in m.blocks if b.kind == TOOL_RESULT}
    sizes: dict[str, int] = {}

    def size(tool_id: str) -> int:
        if tool_id not in sizes:
            sizes[tool_id] = content_chars(results[tool_id].result_text) if tool_id in results else 0
        return sizes[tool_id]

    return lambda tool_id: turns if tool_id in full else max(
        MIN_COLD_TURNS, min(turns, round(turns * ref_chars / max(1, size(tool_id)))))


def worked_reads(reads: list[tuple[str, list[str], int]], changed: dict[str, list[int]]) -> set[str]:
    """Tool ids of the reads (as `_reads_and_changes` lists them) of a file some call changed
    in an earlier turn: a file the agent is working on, not one it explores."""
    return {tool_id for tool_id, paths, turn in reads if any(changed[p] and changed[p][0] < turn for p in paths)}


def cold_reads(messages: list[Message], turns: int, anchor_turn: int, ref_chars: int = 0,
               ref_changed: bool = True) -> set[str]:
    """Tool ids of file reads at least `turns` assistant turns older than `anchor_turn` whose
    file no call changed (wrote, edited, moved, deleted) within `turns` turns after the read.
    Of the corpus's reads over 3,000 characters, those whose file is never changed supply 1% of
    the lines later copied into edits; 93% come from reads whose file changes within 30 messages.
    `turns` 0: none; a read longer than `ref_chars` waits fewer turns (`cold_turns`), unless
    `ref_changed` is false and its file was changed before it (`worked_reads`)."""
    if turns <= 0:
        return set()
    reads, changed = _reads_and_changes(messages)
    limit = cold_turns(messages, turns, ref_chars, () if ref_changed else worked_reads(reads, changed))
    return {tool_id for tool_id, paths, turn in reads if anchor_turn - turn >= limit(tool_id)
            and not any(turn <= at <= turn + limit(tool_id) for path in paths for at in changed[path])}


def committed_reads(messages: list[Message], anchor_turn: int) -> set[str]:
    """Tool ids of file reads made in a turn before one, up to `anchor_turn`, whose call ran
    `git commit` and did not fail (`is_failed_result`: flagged, or a non-zero exit the text
    reports): the agent has finished the work the read served. Of the
    corpus's reads followed by such a commit, 5% of the lines later copied into edits are copied
    after it (79 of 1,707)."""
    reads: list[tuple[str, int]] = []
    commit_calls: dict[str, int] = {}
    committed_at = -1
    for msg in messages:
        if msg.turn > anchor_turn:
            break
        for block in msg.blocks:
            if block.kind == TOOL_RESULT and block.tool_id in commit_calls and not is_failed_result(block):
                committed_at = commit_calls[block.tool_id]
            if block.kind != TOOL_USE:
                continue
            kind = tool_kind(block.tool_name, block.input)
            if kind is ToolKind.FILE_READ:
                reads.append((block.tool_id, msg.turn))
            elif kind is ToolKind.COMMAND and commits(command_of(block.input)):
                commit_calls[block.tool_id] = msg.turn
    return {tool_id for tool_id, turn in reads if turn < committed_at}


def moved_on(messages: list[Message]) -> set[str]:
    """Tool ids of the subagent reports (`is_subagent`) the agent has moved on from: a call in a
    later assistant turn touches a file (`touched_files`: reads, writes, edits, moves, deletions,
    by tools, shell commands or patches). Until then the report is the newest thing the agent
    works on. Decided from the messages alone, in request order; a turn of text or of calls that
    touch no file moves on from nothing. (Docs reads are not kept whole while newest: kept so,
    they cost more in the corpus replay and kept no needed line more; docs/replay-results.md.)"""
    waiting: dict[str, int] = {}
    done: set[str] = set()
    for msg in messages:
        for block in msg.blocks:
            if block.kind != TOOL_USE:
                continue
            if touched_files(block.tool_name, block.input):
                done |= {tool_id for tool_id, turn in waiting.items() if turn < msg.turn}
                waiting = {tool_id: turn for tool_id, turn in waiting.items() if turn >= msg.turn}
            if is_subagent(block.tool_name):
                waiting[block.tool_id] = msg.turn
    return done


COLD_RULES = {"read": cold_reads, "last_change": idle_reads}
"""`TrimOptions.cold_since` -> the rule that tells which reads are cold."""


# -- images and base64 -----------------------------------------------------------------

def image_marker(part: Block, ctx: StageContext, hint: str | None = None) -> Block:
    """A text part with a marker in place of an image part (original part JSON in CCR)."""
    raw = part.raw if isinstance(part.raw, dict) else {}
    source = raw["source"] if isinstance(raw.get("source"), dict) else {}
    data, declared = str(source.get("data", "")), str(source.get("media_type", ""))
    image_url = raw.get("image_url")
    url = str(image_url.get("url", "")) if isinstance(image_url, dict) else ""
    if url.startswith("data:"):  # OpenAI: data:image/png;base64,....
        declared, _, data = url[5:].partition(";base64,")
    original = dumps(raw).decode()
    kind = media_type(data, declared)
    size = len(data or url)

    def build(key: str) -> str:
        return format_marker(f"{kind} image, {kb(size)} base64, omitted", key)

    text = ctx.lossy(original, build, hint=hint)
    if text == original:
        return part
    return Block(TEXT, raw={"type": "text", "text": text}, text=text)


# -- the stage -------------------------------------------------------------------------


def run(messages: list[Message], ctx: StageContext) -> list[Message]:
    opts = options_as(TrimOptions, ctx.config.options("trim_outputs"))
    polls = polled_calls(messages, ctx.scans, ctx.unchanged)
    seen = resolved(messages, polls)  # a poll classified as the command it polls
    calls = {b.tool_id: (b.tool_name, b.input) for m in seen for b in m.blocks if b.kind == TOOL_USE}
    stale = stale_reads(seen)
    moved = moved_on(seen)
    cold = COLD_RULES[opts.cold_since](seen, opts.cold_after_turns, ctx.anchor_turn, opts.cold_ref_chars,
                                       opts.cold_ref_changed)
    if opts.cold_after_commit:
        cold |= committed_reads(seen, ctx.anchor_turn)

    def trim_block(msg: Message, block: Block) -> Block:
        if not ctx.may_compress_result(block):
            return block
        name, tool_input = calls.get(block.tool_id, (block.tool_name, block.call_input))
        return _trim_block(block, msg, ctx, opts, name, tool_input, block.tool_id in stale, block.tool_id in cold,
                           block.tool_id in moved)

    return each_block(messages, ctx, trim_block, "trimmed tool output")


def _trim_block(block: Block, msg: Message, ctx: StageContext, opts: TrimOptions, name: str,
                tool_input: Any, stale: bool, cold: bool, moved: bool) -> Block:
    """`name` and `tool_input`: of the block's call, or of the command a poll polls; `moved`:
    the agent has moved on from this report (`moved_on`)."""
    kind = tool_kind(name, tool_input)
    reading = kind is ToolKind.FILE_READ
    path = first_path(name, tool_input) if reading else ""
    source = not reading or is_source(path)
    text = block.result_text
    if is_subagent(block.tool_name) and not moved and ctx.age(msg) < opts.report_fresh_turns:
        return block
    copy = reading and _only_copy(ctx.tier, opts, stale, source, cold, text)  # its text stays whole; images do not
    scale = opts.scale(ctx.tier, ctx.age(msg), stale, source, cold)
    over = len(text) > opts.min_chars * scale
    if not copy and (over or (has_base64_run(text, opts.base64_min_chars)
                              and base64_pattern(opts.base64_min_chars).search(text))):
        budget = opts.budget(scale, kind)
        hint = ctx.rerun_hint(block)
        short = accept(ctx, text, lambda key: trimmed(text, kind, budget, key, path, opts.base64_min_chars, over),
                       hint, stored=thinning_key(text) if reading else None)
        block = block.with_result_text(short)
    if any(p.kind == IMAGE for p in block.parts):
        block = replace(block, parts=tuple(image_marker(p, ctx, ctx.rerun_hint(block)) if p.kind == IMAGE else p for p in block.parts))
    return block


def _only_copy(tier: Tier, opts: TrimOptions, stale: bool, source: bool, cold: bool, text: str) -> bool:
    """Whether a file read's text is the agent's copy, kept whole: no later message shows its
    lines (not `stale`) and either the tier is below `unshown_tier` or it is a read of source
    code that is not cold; never with a line longer than `fresh_max_line_chars` (minified code
    is not copied line by line), nor with `keep_fresh_reads` off."""
    if stale or not opts.keep_fresh_reads or not (tier < Tier.parse(opts.unshown_tier) or (source and not cold)):
        return False
    return max(map(len, text.split("\n")), default=0) <= opts.fresh_max_line_chars


STAGE = Stage("trim_outputs", run, Tier.ALWAYS, options=TrimOptions)
