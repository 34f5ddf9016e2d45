"""supersede_inputs: bodies of old writes and edits that the file itself now holds.

A call writes or edits files (`compress.vocab.calls.touched_files`: Write `content`, Edit
`old_string`/`new_string`, MultiEdit `edits`, NotebookEdit, OpenCode `write`/`edit`, apply_patch
bodies, shell heredocs such as `cat > f <<'EOF'`). Its body strings go to CCR and each becomes a
one-line note when the call is superseded:

- shown again: every file it changes is later read, written whole, re-created or deleted
  (`SHOWN_AGAIN`), so a newer copy of the file, or none, stands in the request (a re-read the
  host answers with a pointer back to an earlier read shows nothing,
  `compress.vocab.signals.rereads`). Reads of part of a file (an offset and limit, `sed -n`,
  `head`, `wc -l`) show only what their results hold: once any read is among those touches, they
  (with any whole writes) must show `READS_SHOW` of the body's distinct lines
  (`compress.stagekit.shown_again`, the test `trim_outputs.stale_reads` asks too). The note names the
  touch by which that holds for every file: `<<ctxmill: 412-line body of src/app.py stored; the file was re-read
  at turn 52 · deep_expand("…")>>`. A later edit alone does not: the agent, which does not see
  the disk, copies the next edit's old text out of this body (and a moved file's lines live on
  at the new path);
- settled: no call has touched its files (read, written, edited) for at least
  `settled_after_turns` (option, default 12, chosen with the corpus replay and judged
  leave-one-project-out) assistant turns, and it has left the protected tail. The agent has
  moved on from the file, so the body is history; while it keeps editing the file, it copies
  old texts out of this body. The note says when it was made: `<<ctxmill: 40-line new_string
  of src/app.py stored; edit made at turn 14, no later
  change to the file · deep_expand("…")>>`. The call's result (for an edit, the host's snippet
  of the edited file) stays as it was. `settled_after_turns: 0` turns this off; `settled_tier`
  (option, default "high") is the lowest tier at which a body settles: "high" keeps a body
  that no later message shows, the agent's only copy of its lines, until the host is about to
  compact; "always" settles it by age at any tier (cheaper, but it hides lines the agent later
  copies; docs/replay-results.md). A subagent's
  prompt (Task, Agent: not a write, but the same rule) settles as many turns after the call, by
  when its report is history too (`trim_outputs.report_fresh_turns`): `<<ctxmill: 40-line prompt
  stored; the subagent ran at turn 14 · deep_expand("…")>>`; its short description stays, and a
  user who protects the tool keeps both whole;
- history at birth (before either, protected tail included): in the request that first
  carries a successful call and its result, the texts an edit replaced (Edit/MultiEdit
  `old_string`, OpenCode `oldString`: the file no longer holds them) and, when the result is a
  protected tool's (never cut, so its copy stays), the written texts it shows line for line, in a
  row (a host's numbered echo of a rewritten file or an edited region) become notes, when they
  total more than `min_chars`. So does an input string of a call that changes no file when its
  protected result quotes it whole (Claude Code's approval of ExitPlanMode quotes the `plan`:
  `<<ctxmill: 39-line plan stored; the result of this call shows every line of it · …>>`). The
  prompt cache has not stored them yet: `<<ctxmill: 12-line old_string of src/app.py stored; this edit replaced it,
  the file no longer holds it · deep_expand("…")>>`, `<<ctxmill: 300-line body of src/app.py
  stored; the result of this call shows every line of it · deep_expand("…")>>`. A `new_string`
  the result does not show stays whole: later edits copy from it. The calls of the latest reply
  wait when it carries thinking (the provider wants that reply echoed as it sent it): they are
  noted when a later epoch re-decides them.

Only the note of a call's longest body string says where and why; its other strings get a short
note (`<<ctxmill: 35-line new_string stored · deep_expand("…")>>`). The longest string saves the
most, so whenever any string of a call is noted, that one is.

A shell command holding such a heredoc is noted as a whole, so no command that writes a note
into a file is left behind.

What must hold:
- Writes and edits younger than `settled_after_turns` or still in the protected tail keep
  their inputs whole, but for history at birth, unless a later call showed their files again
  (a later edit alone never supersedes). Notes of history at birth depend only on the call and its result, so every
  epoch renders them the same (`Stage.decides_on_arrival`).
- Failed calls neither supersede nor count as the latest write (`purge_errors` handles them).
- A call is considered only when its body strings total more than `min_chars` (option,
  default 500); each string is replaced under the common saving rule (`ctx.lossy`).
- Ids, tool names, input keys and list lengths never change (`compress.stagekit.inputnotes`); only
  mutable messages change (for history at birth, every message the run decides). This stage
  runs at every tier: a superseded body is history, and reading it again with every request is
  what a prompt cache charges for.
"""

from __future__ import annotations

from dataclasses import dataclass

from compress.config import options_as
from compress.model import Block, Message, ToolCall, index_tool_calls
from compress.stagekit.inputnotes import KeyPath, field_name, large_strings, line_count, note_strings, short_path
from compress.stagekit.line_numbers import shown_at, unnumbered_lines
from compress.stagekit.shown_again import SHOWN_AGAIN, Showing, copy_lines, later_touches, shown_again_at, written_lines
from compress.stagekit.stage import BlockEdit, Stage, StageContext, edit_blocks
from compress.tiers import Tier
from compress.vocab.calls import touched_files
from compress.vocab.polls import polled_calls, resolved
from compress.vocab.shell import shell_heredocs
from compress.vocab.signals.errors import is_failed_result
from compress.vocab.signals.rereads import points_to_earlier_read
from compress.vocab.tools import (
    ECHOED_KEYS,
    OLD_TEXT_KEYS,
    PATH_KEYS,
    ToolKind,
    is_protected_tool,
    is_subagent,
    tool_kind,
)
from compress.vocab.touches import CHANGES, CREATE, DELETE, EDIT, MOVE, READ, WRITE, FileTouch, is_patch

_VERBS = {READ: "re-read", WRITE: "rewritten", EDIT: "edited again", DELETE: "deleted", MOVE: "moved",
          CREATE: "re-created"}
_MADE = {WRITE: "written", EDIT: "edit made", CREATE: "created", DELETE: "deleted", MOVE: "moved"}
_BODY_NAMES = {"content": "body", "file_text": "body", "new_source": "body"}
_SHOWN = "the result of this call shows every line of it"


@dataclass(frozen=True, slots=True)
class _Touching:
    """A call that did not fail, with the files it touches (none for most tools), in request order;
    `shows`: False for a re-read the host answered with a pointer back to the earlier read
    (`compress.vocab.signals.rereads`), which touches its file without showing it again."""

    call: ToolCall
    block: Block
    turn: int
    touches: list[FileTouch]
    shows: bool = True


def _calls(messages: list[Message], start: int) -> list[_Touching]:
    """The calls from message `start` on that did not fail, with the files each touches (every
    decision looks only at a call and later ones, so an incremental run reads only the new
    messages)."""
    out = []
    tail = index_tool_calls(messages[start:]).values()
    calls = [c._replace(use_msg=c.use_msg + start, result_msg=c.result_msg + start if c.result_msg >= 0 else -1)
             for c in sorted(tail, key=lambda c: (c.use_msg, c.use_block))]
    for call in calls:
        result = messages[call.result_msg].blocks[call.result_block] if call.result_msg >= 0 else None
        if result is not None and is_failed_result(result):
            continue
        block = messages[call.use_msg].blocks[call.use_block]
        shows = result is None or not points_to_earlier_read(result.result_text)
        out.append(_Touching(call, block, messages[call.use_msg].turn, touched_files(block.tool_name, block.input), shows))
    return out


def _command_path(block: Block) -> KeyPath | None:
    """Where the shell command string sits in a command tool's input."""
    if not isinstance(block.input, dict):
        return None
    for key in ("command", "cmd"):
        value = block.input.get(key)
        if isinstance(value, str):
            return (key,)
        if isinstance(value, list) and value and isinstance(value[-1], str):
            return (key, len(value) - 1)
    return None


def _bodies(block: Block, min_chars: int) -> list[tuple[KeyPath, str]]:
    """The body strings of a writing call when they total more than `min_chars`, else []."""
    command_path = _command_path(block)
    if command_path is not None and (tool_kind(block.tool_name) is ToolKind.COMMAND or len(command_path) == 2):
        command = block.input[command_path[0]] if len(command_path) == 1 else block.input[command_path[0]][-1]
        written = sum(len(h.body) for h in shell_heredocs(command) if h.targets)
        size = len(command) if is_patch(command) else written
        return [(command_path, command)] if size > min_chars else []
    strings = large_strings(block.input, 0, frozenset(PATH_KEYS))
    return strings if sum(len(s) for _, s in strings) > min_chars else []


def _signed_latest_reply(messages: list[Message]) -> range:
    """The messages of the latest model reply (the last run of assistant messages) when it
    carries thinking, else none: the provider checks that reply against what it sent, so its
    calls keep their inputs until a later reply follows."""
    end = len(messages)
    while end and messages[end - 1].role != "assistant":
        end -= 1
    start = end
    while start and messages[start - 1].role == "assistant":
        start -= 1
    return range(start, end) if any(messages[i].has_thinking for i in range(start, end)) else range(0)


def _history_at_birth(block: Block, result: str, min_chars: int, result_kept: bool) -> dict[KeyPath, tuple[str, str]]:
    """Body strings of a successful call that are history once its result arrives, with why:
    the texts an edit replaced (`OLD_TEXT_KEYS`, also in a MultiEdit's `edits`: the file no
    longer holds them), and, when the result is never cut (`result_kept`: a protected tool's),
    written texts it shows line for line, in a row (hosts echo a rewritten file or an edited
    region with line numbers). {} unless they total more than `min_chars`."""
    found: dict[KeyPath, tuple[str, str]] = {}
    shown: list[str] | None = None
    for path, text in large_strings(block.input, 0, frozenset(PATH_KEYS)):
        name = field_name(path)
        if name in OLD_TEXT_KEYS:
            found[path] = (text, "this edit replaced it, the file no longer holds it")
        elif name in ECHOED_KEYS and result_kept:
            shown = unnumbered_lines(result) if shown is None else shown
            if shown_at(shown, text) is not None:
                found[path] = (text, _SHOWN)
    return found if sum(len(text) for text, _ in found.values()) > min_chars else {}


def _quoted_at_birth(block: Block, result: str, min_chars: int) -> dict[KeyPath, tuple[str, str]]:
    """Input strings of a call that changes no file which its result, never cut (a protected
    tool's), quotes whole: Claude Code's answer to an approved ExitPlanMode holds the `plan`.
    {} unless they total more than `min_chars`."""
    found = {path: (text, _SHOWN) for path, text in large_strings(block.input, 0) if text in result}
    return found if sum(len(text) for text, _ in found.values()) > min_chars else {}


def _what(path: KeyPath, text: str) -> str:
    name = field_name(path)
    if is_patch(text):
        return "patch"
    if name in ("command", "cmd"):
        return "heredoc command"
    return _BODY_NAMES.get(name, name)


@dataclass(frozen=True)
class SupersedeOptions:
    min_chars: int = 500
    settled_after_turns: int = 12
    settled_tier: str = "high"
    """The lowest tier at which a body settles by age ("always", "medium", "high")."""

    def __post_init__(self) -> None:
        Tier.parse(self.settled_tier)


def run(messages: list[Message], ctx: StageContext) -> list[Message]:
    options = options_as(SupersedeOptions, ctx.config.options("supersede_inputs"))
    min_chars, settled_after = options.min_chars, options.settled_after_turns
    # a poll is the command it polls: a read whose lines came back through write_stdin shows its file
    seen = resolved(messages, polled_calls(messages, ctx.scans, ctx.unchanged))
    calls = _calls(seen, next((i for i, mutable in enumerate(ctx.mutable) if mutable), len(messages)))
    timeline = [item for item in calls if item.touches]
    later = later_touches([item.touches for item in timeline])

    signed = _signed_latest_reply(messages)
    edits: dict[int, dict[int, BlockEdit]] = {}

    def note_at_birth(item: _Touching, born: dict[KeyPath, tuple[str, str]], where: str) -> None:
        edits.setdefault(item.call.use_msg, {})[item.call.use_block] = (
            lambda block: note_strings(block, [(path, text) for path, (text, _) in born.items()], ctx,
                                       lambda path, text: f"{line_count(text)}-line {_what(path, text)}{where} stored; {born[path][1]}"))

    def answer(item: _Touching) -> Block | None:
        """The call's result, when it has one and the call may change now."""
        if item.call.result_msg < 0 or item.call.use_msg in signed:
            return None
        return messages[item.call.result_msg].blocks[item.call.result_block]

    def shows_it_again(pos: int, touch: FileTouch) -> bool:
        return touch.action in SHOWN_AGAIN and timeline[pos].shows

    shown_lines: dict[tuple[int, bool], frozenset[str]] = {}

    def lines_shown(pos: int, touch: FileTouch) -> frozenset[str]:
        """The lines a touch that shows its file again puts in front of the agent: a read's
        result (as earlier stages left it), a whole write's body."""
        key = (pos, touch.action == READ)
        if key not in shown_lines:
            call = timeline[pos].call
            if touch.action != READ:
                shown_lines[key] = written_lines(timeline[pos].block.tool_name, timeline[pos].block.input)
            elif call.result_msg < 0:
                shown_lines[key] = frozenset()
            else:
                shown_lines[key] = copy_lines(messages[call.result_msg].blocks[call.result_block].result_text, True)
        return shown_lines[key]

    def shown_again_by(item: _Touching, showing: list[list[Showing]]) -> Showing | None:
        """The first later touch by which every file of `item` has been shown again, with the
        lines it wrote (`compress.stagekit.shown_again`); None before then."""
        return shown_again_at(written_lines(item.block.tool_name, item.block.input), showing, lines_shown)

    def settled(quiet_since: int) -> bool:
        return settled_after > 0 and ctx.anchor_turn - quiet_since >= settled_after

    pressed = ctx.tier >= Tier.parse(options.settled_tier)

    for item in calls:
        if item.touches or not ctx.mutable[item.call.use_msg] or (result := answer(item)) is None:
            continue
        if is_protected_tool(item.block.tool_name, ctx.config.protected_tools, item.block.input):
            if quoted := _quoted_at_birth(item.block, result.result_text, min_chars):
                note_at_birth(item, quoted, "")
        elif is_subagent(item.block.tool_name) and ctx.past_tail[item.call.use_msg] and settled(item.turn):
            if prompts := large_strings(item.block.input, min_chars):
                # mypy cannot type a lambda whose defaults bind the loop's values (hence the ignore)
                edits.setdefault(item.call.use_msg, {})[item.call.use_block] = (
                    lambda block, prompts=prompts, turn=item.turn: note_strings(  # type: ignore[misc]
                        block, prompts, ctx, lambda path, text: f"{line_count(text)}-line {field_name(path)} stored; "
                                                                f"the subagent ran at turn {turn}"))
    for pos, item in enumerate(timeline):
        use = item.call.use_msg
        changed = list(dict.fromkeys(t.path for t in item.touches if t.action in CHANGES))
        if not ctx.mutable[use] or not changed:
            continue
        afterwards = [later(pos, path) for path in changed]
        showing = [[(p, t) for p, t in touches if shows_it_again(p, t)] for touches in afterwards]
        shown_again = shown_again_by(item, showing) if ctx.past_tail[use] else None
        quiet_since = max([item.turn, *(timeline[p].turn for touches in afterwards for p, _ in touches)])
        where = short_path(changed[0]) + (f" (+{len(changed) - 1} more files)" if len(changed) > 1 else "")
        if not (ctx.past_tail[use] and (shown_again is not None or (pressed and settled(quiet_since)))):
            result = answer(item)
            kept = is_protected_tool(item.block.tool_name, ctx.config.protected_tools, item.block.input)
            if result is not None and (born := _history_at_birth(item.block, result.result_text, min_chars, kept)):
                note_at_birth(item, born, f" of {where}")
            continue
        strings = _bodies(item.block, min_chars)
        if not strings:
            continue
        if shown_again is not None:
            next_pos, next_touch = shown_again
            when = f"the file was {_VERBS[next_touch.action]} at turn {timeline[next_pos].turn}"
        else:
            made = next(t.action for t in item.touches if t.action in CHANGES)
            untouched = not any(t.action in CHANGES for touches in afterwards for _, t in touches)
            when = f"{_MADE[made]} at turn {item.turn}" + (", no later change to the file" if untouched else "")

        def summarize(path: KeyPath, text: str, where: str = where, when: str = when,
                      main: KeyPath = max(strings, key=lambda ps: len(ps[1]))[0]) -> str:  # noqa: B008 - bound per write
            what = f"{line_count(text)}-line {_what(path, text)}"
            return f"{what} of {where} stored; {when}" if path == main else f"{what} stored"

        edits.setdefault(use, {})[item.call.use_block] = (  # mypy cannot type the lambda: its defaults bind loop values
            lambda block, strings=strings, summarize=summarize: note_strings(block, strings, ctx, summarize))  # type: ignore[misc]
    return edit_blocks(messages, ctx, edits, "noted the body of a superseded write or edit")


STAGE = Stage("supersede_inputs", run, Tier.ALWAYS, may_edit_inputs=True, decides_on_arrival=True,
              options=SupersedeOptions)
