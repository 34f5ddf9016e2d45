"""What a checkpoint records, extracted from a session's messages without any LLM.

`extract(messages)` reads canonical messages (compress.model) and returns `Extraction`:
- intents: what the person asked, each request in order. Host-written user messages are not
  requests (compress.vocab.injections.person_written): task notifications, slash-command
  records, reminders, compaction summaries, interruption notices, image placeholders, and turns
  that only carry tool results. The reason the person gave for refusing a tool call is a request;
- decisions / constraints / critical notes: sentences of the person's and the agent's text
  that state them (compress.vocab.signals.statements `states_decision`, `states_constraint`:
  English, Chinese and Japanese cues minus chatter, questions and offers; constraints are what
  the person requires plus limits the agent finds). The person's answers to the agent's questions are
  decisions, and so is a proposal of the agent ("I suggest", "我建议") the person accepts;
- gotchas: a failed call and what fixed it, chosen among the calls after it in a window of
  `FIX_WINDOW` acting turns (turns that change files or run commands doing more than look):
  a failed edit is fixed by a later change to the same file; a failed command by what was done
  before a re-run of it got past the error (a change to a file first), else by the re-run; else
  by the call most related to the error (names the files, programs, flags the error names),
  else by an edit made within `NEXT_EDIT` acting turns.
  A "fix" that only looks (ls, cat, git status, a test run) never counts, nor a result that
  repeats the error (`cmd | head` hides the exit code). Failed reads and searches, results that
  say nothing but "Exit code 1", and calls the person refused or the host blocked are not errors
  awaiting a fix; refusals are kept apart (`refusals`). An error that comes back stands for its
  earlier occurrences. Errors left unfixed are `unresolved_errors`;
- files: every file the session created, edited, moved or deleted, from the inputs of calls
  that did not fail (compress.vocab.calls), in first-touch order; scratch files a shell command
  writes (under a temporary directory or a hidden folder of the home directory) and shell
  variables are left out;
- todos: the latest todo list the agent wrote (TodoWrite-style tools), open and done;
- next steps: what the agent's replies say is left or offer to do next, and the list a
  "Next steps:" line introduces; `reply_turns` lets the checkpoint keep those of the last
  replies. When the session stops while the agent still works on the latest request, that
  request is `unfinished`;
- last_reply: the agent's last text.
Everything is deterministic and linear in the session size (the fix search looks at a bounded
window after each error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import regex

from compress.model import TEXT, TOOL_RESULT, TOOL_USE, Message
from compress.vocab.calls import touched_files
from compress.vocab.injections import answers, person_written, refusal
from compress.vocab.shell import command_words, looks_only, main_command, same_command
from compress.vocab.signals.cues import has_cue
from compress.vocab.signals.errors import is_failed_result, says_nothing, telling_error_line
from compress.vocab.signals.statements import (accepts, introduces_steps, proposes, refers_back, states_constraint,
                                               states_decision, states_next_step)
from compress.vocab.tools import BOOKKEEPING_TOOLS, ToolKind, base_name, command_of, tool_kind
from compress.vocab.touches import CHANGES

FIX_WINDOW = 15  # acting turns after an error in which its fix is looked for
NEXT_EDIT = 2  # an edit this soon after an error fixes it when nothing else relates to the error
_SENTENCE_END = regex.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n+")
_SOFT_WRAP = regex.compile(r"(?<=[\w,(\-])[ \t]*\n[ \t]*(?=[a-z(])")
_CODE_FENCE = regex.compile(r"```[^`]*+```", regex.DOTALL)
_LIST_ITEM = regex.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*\S)")
_HAN = regex.compile(r"\p{Han}")
_TOKEN = regex.compile(r"[\w./\\@:+-]{4,}")
_LINE_SUFFIX = regex.compile(r"(?::\d+)+$")
_NO_CHOICE = regex.compile(r"(?i)not sure|you decide|up to you|随便|都行|你决定")
_SIBLING = regex.compile(r"(?i)^\s*(?:<tool_use_error>)?\s*Sibling tool call errored")
_LOOKING_KINDS = frozenset({ToolKind.FILE_READ, ToolKind.SEARCH, ToolKind.FILE_LIST, ToolKind.SUBAGENT_WEB})
_TEMP_DIRS = ("/tmp/", "/private/tmp/", "/var/folders/", "/dev/", "tmp/", "private/tmp/")
_MIN_SENTENCE = 8  # characters; a Han character counts twice
_MAX_SENTENCE = 300


@dataclass(frozen=True)
class Said:
    """One extracted sentence or request; `turn` is the assistant turn it belongs to."""

    text: str
    turn: int
    role: str


@dataclass(frozen=True)
class Gotcha:
    error: str  # the most telling error line
    fix: str  # what fixed it: "Edit path" / "Bash: command"; "" when nothing did
    turn: int
    detail: str  # the whole failed result (goes to CCR when long)


@dataclass(frozen=True)
class Refusal:
    """A tool call the person refused (or the host blocked), with the person's reason if given."""

    call: str
    reason: str
    turn: int


@dataclass
class Extraction:
    intents: list[Said] = field(default_factory=list)
    decisions: list[Said] = field(default_factory=list)
    constraints: list[Said] = field(default_factory=list)
    critical: list[Said] = field(default_factory=list)
    next_steps: list[Said] = field(default_factory=list)
    gotchas: list[Gotcha] = field(default_factory=list)
    unresolved_errors: list[Gotcha] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    files: dict[str, list[str]] = field(default_factory=dict)  # path -> actions in order, no repeats
    todos_open: list[str] = field(default_factory=list)
    todos_done: list[str] = field(default_factory=list)
    last_reply: Said | None = None
    reply_turns: list[int] = field(default_factory=list)  # turns of the agent's messages that hold text
    unfinished: Said | None = None  # the latest request, when the session stops while the agent works on it
    tool_calls: int = 0
    turns: int = 0


def user_text(msg: Message) -> str:
    """What the person wrote in a user message: host-injected segments and notices removed."""
    parts = (person_written(b.text).strip() for b in msg.blocks if b.kind == TEXT)
    return "\n\n".join(part for part in parts if part)


def assistant_text(msg: Message) -> str:
    return "\n\n".join(b.text.strip() for b in msg.blocks if b.kind == TEXT and b.text.strip())


def sentences(text: str) -> list[str]:
    """Prose sentences of `text` (code fences dropped, hard-wrapped lines joined), whitespace
    collapsed, length-capped."""
    out = []
    for piece in _SENTENCE_END.split(_SOFT_WRAP.sub(" ", _CODE_FENCE.sub(" ", text))):
        sentence = " ".join(piece.split()).lstrip("-*#>0123456789. ")
        if len(sentence) + len(_HAN.findall(sentence)) >= _MIN_SENTENCE and not sentence.startswith(("|", "`")):
            out.append(sentence[:_MAX_SENTENCE])
    return out


def listed_steps(text: str) -> list[str]:
    """The items of a list that a next-step line ending in ':' introduces ("Next steps:",
    "the follow-up I'd run: 1. … 2. …")."""
    out: list[str] = []
    lines = _CODE_FENCE.sub(" ", text).split("\n")
    i = 0
    while i < len(lines):
        if not introduces_steps(lines[i]):
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        while j < len(lines) and (m := _LIST_ITEM.match(lines[j])):
            out.append(" ".join(m.group(1).split())[:_MAX_SENTENCE])
            j += 1
        i = max(j, i + 1)
    return out


def _todos(tool_input) -> list[dict] | None:
    todos = tool_input.get("todos") if isinstance(tool_input, dict) else None
    return [t for t in todos if isinstance(t, dict)] if isinstance(todos, list) else None


def _todo_text(todo: dict) -> str:
    return " ".join(str(todo.get("content") or todo.get("activeForm") or todo.get("text") or "").split())


def _tokens(text: str) -> set[str]:
    """Salient tokens of a text: paths, file names, flags and identifiers (holding . / _ - or a
    digit), lower-cased, without line numbers and leading ./ or /."""
    out = set()
    for token in _TOKEN.findall(text[:20_000]):
        token = _LINE_SUFFIX.sub("", token.strip(".:,-")).replace("\\", "/").lower().lstrip("./")
        if len(token) >= 4 and any(c in token for c in "./_-") or len(token) >= 5 and any(c.isdigit() for c in token):
            out.add(token)
            last = token.rsplit("/", 1)[-1]
            if "/" in token and "." in last and len(last) >= 4:
                out.add(last)
    return out


def _overlap(wanted: set[str], tokens: set[str]) -> int:
    """How many of `wanted` (5 characters or more) occur in one of `tokens`."""
    return sum(1 for w in wanted if len(w) >= 5 and any(w in t for t in tokens))


def _scratch(path: str) -> bool:
    """A scratch file a shell command writes: under a temporary directory or a hidden folder of
    the home directory (a tool's state, e.g. `~/.superstack/telemetry.jsonl`), or a shell variable."""
    path = path.replace("\\", "/")
    return path.startswith(("$", "%", "~/.")) or path.startswith(_TEMP_DIRS)


@dataclass
class _Call:
    name: str
    input: Any
    turn: int
    kind: ToolKind
    command: str
    changes: list  # FileTouch of the files it changes
    result: str = ""
    failed: bool = False
    refused: bool = False

    def label(self, rerun: bool = False) -> str | None:
        """How the call reads as a fix: "Edit path" / "Bash: command"; None for a call that only
        looks (unless `rerun`: a re-run of a failed command may only look)."""
        if self.changes:
            return f"{self.name} " + ", ".join(t.path for t in self.changes[:3])
        if self.kind is ToolKind.COMMAND and self.command and (rerun or not looks_only(self.command)):
            return f"{self.name}: {self.command[:160]}"
        return None

    def acts(self) -> bool:
        return bool(self.changes) or bool(self.command) and not looks_only(self.command)

    def succeeded(self, error: str) -> bool:
        """It did not fail, and its output does not repeat the error (`cmd | head` hides the exit code)."""
        return not self.failed and not self.refused and error[:80] not in self.result

    def got_past(self, error: str) -> bool:
        """A re-run whose output no longer shows the error (it may fail further on)."""
        return not self.refused and error[:80] not in self.result


class _Extractor:
    def __init__(self) -> None:
        self.out = Extraction()
        self.seen: set[tuple[str, str]] = set()
        self.calls: dict[str, _Call] = {}
        self.order: list[_Call] = []
        self.proposals: list[Said] = []  # the last agent text's proposals, for the person to accept

    def _add(self, bucket: list[Said], kind: str, said: Said) -> None:
        key = (kind, said.text.lower())
        if key not in self.seen:
            self.seen.add(key)
            bucket.append(said)

    def text(self, text: str, turn: int, role: str) -> None:
        proposals: list[Said] = []
        previous = ""
        for sentence in sentences(text):
            said = Said(sentence, turn, role)
            if states_decision(sentence):
                self._add(self.out.decisions, "d", said)
            if states_constraint(sentence, role):
                self._add(self.out.constraints, "c", said)
            if has_cue(sentence, "critical"):
                self._add(self.out.critical, "k", said)
            if role == "assistant":
                if states_next_step(sentence):
                    step = f"{previous} {sentence}" if refers_back(sentence) and previous else sentence
                    self._add(self.out.next_steps, "n", Said(step[:_MAX_SENTENCE * 2], turn, role))
                if proposes(sentence):
                    proposals.append(said)
            previous = sentence
        if role == "assistant":
            self.proposals = proposals
            for step in listed_steps(text):
                self._add(self.out.next_steps, "n", Said(step, turn, role))
        else:
            if accepts(text):
                for said in self.proposals:
                    self._add(self.out.decisions, "d", said)
            self.proposals = []

    def tool_use(self, block, turn: int) -> None:
        name, tool_input = block.tool_name or "", block.input
        self.out.tool_calls += 1
        kind = tool_kind(name, tool_input)
        changes = [t for t in touched_files(name, tool_input) if t.action in CHANGES]
        command = command_of(tool_input) if kind is ToolKind.COMMAND else ""
        if kind is ToolKind.COMMAND:
            changes = [t for t in changes if not _scratch(t.path)]
        call = _Call(name, tool_input, turn, kind, command, changes)
        self.order.append(call)
        if block.tool_id:
            self.calls[block.tool_id] = call
        todos = _todos(tool_input)
        if todos is not None:
            self.out.todos_open = [_todo_text(t) for t in todos if t.get("status") != "completed" and _todo_text(t)]
            self.out.todos_done = [_todo_text(t) for t in todos if t.get("status") == "completed" and _todo_text(t)]

    def tool_result(self, block, turn: int) -> None:
        call = self.calls.get(block.tool_id)
        if call is None:
            return
        text = call.result = block.result_text
        chosen = answers(text)
        if chosen:
            for question, answer in chosen:
                if not _NO_CHOICE.search(answer):
                    self._add(self.out.decisions, "d", Said(f"{answer} (asked: {question})", turn, "user"))
            return
        refused, reason = refusal(text)
        if refused:
            call.refused = True
            self.out.refusals.append(Refusal(call.label(rerun=True) or call.name, reason, turn))
            if reason:
                self.out.intents.append(Said(reason, turn, "user"))
                self.text(reason, turn, "user")
            return
        call.failed = is_failed_result(block) and not _SIBLING.match(text[:200])

    def finish(self) -> Extraction:
        for call in self.order:
            if call.failed or call.refused:
                continue
            for touch in call.changes:
                actions = self.out.files.setdefault(touch.path, [])
                if touch.action not in actions:
                    actions.append(touch.action)
        self._pair_fixes()
        return self.out

    def _pair_fixes(self) -> None:
        calls = self.order
        errors = []
        for i, call in enumerate(calls):
            if not call.failed or call.kind in _LOOKING_KINDS or base_name(call.name) in BOOKKEEPING_TOOLS:
                continue
            error = telling_error_line(call.result)[:_MAX_SENTENCE]
            if not says_nothing(error):  # "Exit code 1" alone: a search that found nothing, a check that said no
                errors.append((i, call, error))
        for n, (i, call, error) in enumerate(errors):
            again = next((j for j, _, e in errors[n + 1:] if e == error), len(calls))
            fix = _fix_for(call, calls[i + 1:again], error)
            if fix is None and again < len(calls):
                continue  # the same error came back: its later occurrence stands for it
            gotcha = Gotcha(error, fix or "", call.turn, call.result)
            (self.out.gotchas if fix else self.out.unresolved_errors).append(gotcha)


def _fix_for(failed: _Call, later: list[_Call], error: str) -> str | None:
    """What fixed `failed`, from the calls after it (see the module docstring)."""
    window: list[_Call] = []
    acting, last_turn, soon = 0, failed.turn, None
    for call in later:
        if call.acts() and call.turn != last_turn:
            acting, last_turn = acting + 1, call.turn
        if acting > FIX_WINDOW:
            break
        window.append(call)
        if soon is None and acting <= NEXT_EDIT and call.changes and call.kind is not ToolKind.COMMAND \
                and call.succeeded(error):
            soon = call
    target = {t.path for t in failed.changes}
    if target:  # a failed edit is fixed by a later change to the same file
        return next((c.label() for c in window if c.succeeded(error) and any(t.path in target for t in c.changes)), None)
    error_tokens = _tokens(failed.result) | _tokens(error)
    input_tokens = _tokens(failed.command)
    words = set(failed.result.lower().replace("'", " ").replace('"', " ").split())
    main = main_command(failed.command) if failed.command else None

    def related(call: _Call, rerun: bool) -> int:
        """What the call has in common with the error: the tokens it names, the programs and
        subcommands its output mentions, and (not for re-runs) what the failed command named."""
        tokens = _tokens(call.command or " ".join(t.path for t in call.changes))
        parts = {p for w in command_words(call.command) for p in w[:2]} if call.command else set()
        score = 2 * _overlap(error_tokens, tokens) + len({p.lower() for p in parts} & words)
        same_input = 0 if rerun else _overlap(input_tokens, tokens)
        return score + (same_input if same_input >= 2 else 0)

    def best(candidates: list[_Call], need: int = 1, rerun: bool = False) -> str | None:
        """The most related candidate (changes to files first on a tie, then the earliest)."""
        scored = [(related(c, rerun), bool(c.changes), -k, c) for k, c in enumerate(candidates)]
        scored = [x for x in scored if x[0] >= need]
        return max(scored, key=lambda x: x[:3])[3].label(rerun=True) if scored else None

    reruns = [k for k, c in enumerate(window) if main and c.command and same_command(c.command, main)]
    done = next((k for k in reruns if window[k].got_past(error)), None)
    if done is not None:
        steps = [c for c in window[:done] if c.succeeded(error) and c.label()
                 and not (c.command and same_command(c.command, main))]
        edits = [c for c in steps if c.changes]
        passed = [window[k] for k in reruns if window[k].got_past(error)]
        return best(edits, 1) or best(edits, 0) or best(steps, 0) or best(passed, 0, rerun=True)
    return best([c for c in window if c.succeeded(error) and c.label()]) or (soon.label() if soon else None)


def extract(messages: list[Message] | tuple[Message, ...]) -> Extraction:
    ex = _Extractor()
    out = ex.out
    last_request_at = -1
    for index, msg in enumerate(messages):
        out.turns = max(out.turns, msg.turn)
        if msg.role == "user":
            text = user_text(msg)
            if text:
                if not out.intents or out.intents[-1].text != text:
                    out.intents.append(Said(text, msg.turn, "user"))
                last_request_at = index
                ex.text(text, msg.turn, "user")
        elif msg.role == "assistant":
            text = assistant_text(msg)
            if text:
                out.last_reply = Said(text, msg.turn, "assistant")
                if not out.reply_turns or out.reply_turns[-1] != msg.turn:
                    out.reply_turns.append(msg.turn)
                ex.text(text, msg.turn, "assistant")
        for block in msg.blocks:
            if block.kind == TOOL_USE:
                ex.tool_use(block, msg.turn)
            elif block.kind == TOOL_RESULT:
                ex.tool_result(block, msg.turn)
    ex.finish()
    agent = [m for m in messages[last_request_at + 1:] if m.role == "assistant"] if last_request_at >= 0 else []
    if out.intents and agent and any(b.kind == TOOL_USE for b in agent[-1].blocks):
        out.unfinished = out.intents[-1]
    return out
