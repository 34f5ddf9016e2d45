"""decide_on_arrival: cut a long command, search, listing or other tool output once, when it
arrives, and never again.

Output whose future use is unlikely (build and test logs, long listings, search hits, tool
dumps) is decided in the request that first carries it, protected tail included, with the line
budgets of `compress.stagekit.output_cut.TrimOptions` at `scale` (option, default 0.25): command output
keeps its head, tail and every error line with context, search hits their first files and lines
per file, listings are grouped by directory. An output longer than `min_chars` (option, default
2,000, the decide-once cap's limit) is cut; JSON is left for crush_json but for its base64 runs
(images, PDFs inside an MCP tool's JSON), cut on arrival; the results of protected tools are
never touched. A JSON content array (an MCP tool's result as a string,
`compress.stagekit.content_arrays`) is cut as the text inside it, under a marker that says so
(a file read's text inside stays whole, only its base64 runs go). Web output (`fetch`, `WebFetch`, web search) is cut like other
long output; a subagent's report is not (trim_outputs decides it once it is history), unless
`reports` (option, default off) says it is. A poll of a
running command (`compress.vocab.polls`) is decided as the command it polls, which an earlier
message of the same history names (a read polled back is a read; a build's log is cut). A shell
command whose output is the text of files it reads (`compress.vocab.commands.shows_files`: `ls d
&& head -50 package.json`) is a read, not command output. A read of a data file or log (JSON lines, logs, CSV,
task output: `compress.vocab.files.is_data`) is cut the same way. Any other numbered file read
keeps every line whole but only the first and every `number_every`-th (option, default 10) of
its line numbers (`compress.stagekit.line_numbers`; 1 keeps them all, for tools that edit by line
number): the numbers cost about three tokens a line, the lines an agent copies into edits stay
verbatim, and trim_outputs still decides how much of the read to keep later.
Every change stores the original in CCR first and says what was kept.

What must hold: the decision is a pure function of the result and its call (for a poll, the call
it polls; no tier, age or other neighbour enters it), so an epoch that re-decides the message
renders the same bytes and the provider's cached prefix stays valid; a result that already
carries a ctxmill marker (any, an injection removal's included) was decided by an earlier pass
and is left as it is (idempotence); the runner lets this stage, and only it, change the tool
results of the newest messages (`Stage.decides_on_arrival`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ccr.markers import format_marker, has_marker
from compress.config import options_as
from compress.model import TOOL_RESULT, Block, Message
from compress.stagekit.content_arrays import UNWRAPPED, content_array_text
from compress.stagekit.inputnotes import large_strings
from compress.stagekit.line_numbers import NUMBERS_THINNED, shown_at, thin_line_numbers, unnumbered_lines
from compress.stagekit.lossy import accept
from compress.stagekit.output_cut import TrimOptions, has_base64_run, trim_text, trimmed
from compress.stagekit.stage import Stage, StageContext, each_block
from compress.tiers import Tier
from compress.vocab.calls import first_path
from compress.vocab.files import is_data
from compress.vocab.polls import is_poll, polled_calls
from compress.vocab.tools import ECHOED_KEYS, ToolKind, is_subagent, tool_kind
from ground.jsonbytes import parse_document

ARRIVING_KINDS = frozenset({ToolKind.COMMAND, ToolKind.SEARCH, ToolKind.FILE_LIST, ToolKind.OTHER,
                            ToolKind.SUBAGENT_WEB})
"""Kinds decided on arrival; file reads (but of data files) and subagents' reports are the
agent's working material and are decided later (trim_outputs)."""


@dataclass(frozen=True)
class ArrivalOptions:
    min_chars: int = 2_000
    scale: float = 0.25
    number_every: int = 10
    reports: bool = False
    """Whether a subagent's report (`compress.vocab.tools.is_subagent`: Claude Code Task and
    Agent, OpenCode task) is decided on arrival like web output (head, headings, error lines,
    tail; the whole report in CCR) instead of by trim_outputs once it is history
    (`report_fresh_turns`). A report kept whole is rarely cut in time: it arrives early, when an
    epoch cannot yet pay back the cache rewrite of what follows it, so it stays whole until the
    first epoch, often a hundred requests on. Corpus replay at `settled_tier = "high"`: 0.709 ->
    0.699 effective with request times, 0.732 -> 0.722 without, needed lines the same (0.981).
    Off by default: the agent then never sees its report whole, which the replay cannot price
    (it counts the lines edits copy, not the findings the agent was not shown;
    docs/replay-results.md)."""


def run(messages: list[Message], ctx: StageContext) -> list[Message]:
    opts = options_as(ArrivalOptions, ctx.config.options("decide_on_arrival"))
    budgets = options_as(TrimOptions, ctx.config.options("trim_outputs"))

    polling = any(ctx.mutable[i] and any(b.kind == TOOL_RESULT and is_poll(b.tool_name) for b in msg.blocks)
                  for i, msg in enumerate(messages))
    polls = polled_calls(messages) if polling else {}

    def decide(msg: Message, block: Block) -> Block:
        if not ctx.may_compress_result(block):
            return block
        return _decide(block, ctx, opts, budgets, *polls.get(block.tool_id, (block.tool_name, block.call_input)))

    return each_block(messages, ctx, decide, "decided a tool output on arrival")


def _decide(block: Block, ctx: StageContext, opts: ArrivalOptions, budgets: TrimOptions, name: str,
            call_input: object) -> Block:
    """`name` and `call_input`: of the block's call, or of the command a poll polls."""
    kind = tool_kind(name, call_input)
    text = block.result_text
    if has_marker(text):
        return block
    inner = content_array_text(text)
    path = ""
    if kind is ToolKind.FILE_READ:
        path = first_path(name, call_input)
        if inner is not None:  # a read's text stays whole; only base64 (an image read) is cut
            return _unwrapped(block, ctx, opts, budgets, kind, path, inner, is_data(path))
        if not is_data(path):
            return _thin(block, ctx, opts)
    elif kind not in ARRIVING_KINDS or (is_subagent(name) and not opts.reports):
        return block
    if inner is not None:
        return _unwrapped(block, ctx, opts, budgets, kind, path, inner, parse_document(inner) is None)
    if (echo := _echo(block, ctx)) is not None:
        return echo
    if len(text) <= opts.min_chars:
        return block
    lines = parse_document(text) is None
    budget = budgets.budget(opts.scale, kind)
    short = accept(ctx, text, lambda key: trimmed(text, kind, budget, key, path, budgets.base64_min_chars, lines),
                   ctx.rerun_hint(block))
    return block.with_result_text(short)


def _unwrapped(block: Block, ctx: StageContext, opts: ArrivalOptions, budgets: TrimOptions, kind: ToolKind,
               path: str, inner: str, cut_lines: bool) -> Block:
    """A JSON content array (`compress.stagekit.content_arrays`) cut as the text inside it:
    `inner`, cut like other output of its kind when `cut_lines` (else only its base64 runs), under a
    marker that says it was unwrapped; the array itself goes to CCR. Unchanged when nothing is cut:
    JSON text inside is crush_json's."""
    b64 = budgets.base64_min_chars
    if len(inner) <= opts.min_chars and not has_base64_run(inner, b64):
        return block
    budget = budgets.budget(opts.scale, kind)

    def render(key: str) -> str | None:
        cut = trim_text(inner, kind, budget, key, path, b64, cut_lines)
        return None if cut is None else f"{format_marker(UNWRAPPED, key)}\n{cut}"

    return block.with_result_text(accept(ctx, block.result_text, render, ctx.rerun_hint(block)))


def _echo(block: Block, ctx: StageContext) -> Block | None:
    """The result without the lines that repeat, line for line, a text its call wrote (a host's
    numbered echo of a rewritten file: the call's own copy stays), or None when it repeats none."""
    written = [text for path, text in large_strings(block.call_input, 0) if path and path[-1] in ECHOED_KEYS]
    if not written:
        return None
    lines = block.result_text.split("\n")
    shown = unnumbered_lines(block.result_text)
    body = max(written, key=len)
    start = shown_at(shown, body)
    if start is None:
        return None
    end = start + len(body.rstrip("\n").split("\n"))

    def build(key: str) -> str:
        marker = format_marker(f"{end - start} lines showed the written text again, line for line, as in this call", key)
        return "\n".join([*lines[:start], marker, *lines[end:]])

    return block.with_result_text(ctx.lossy(block.result_text, build, ctx.rerun_hint(block)))


def _thin(block: Block, ctx: StageContext, opts: ArrivalOptions) -> Block:
    text = block.result_text
    thinned = thin_line_numbers(text, opts.number_every)
    if thinned is None:
        return block

    def build(key: str) -> str:
        summary = (f"{NUMBERS_THINNED} line {thinned.first} and every {thinned.every}th line up to "
                   f"{thinned.last}; line text unchanged")
        return format_marker(summary, key) + "\n" + thinned.text

    return block.with_result_text(ctx.lossy(text, build, ctx.rerun_hint(block), relative=False))


STAGE = Stage("decide_on_arrival", run, Tier.ALWAYS, decides_on_arrival=True, options=ArrivalOptions)
