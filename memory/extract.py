"""What a checkpoint records, extracted from a session's messages without any LLM.

`extract(messages)` reads canonical messages (compress.model) and returns `Extraction`:
- intents: what the person asked, each user request in order (host-injected text removed);
- decisions / constraints / critical notes: sentences of user and assistant text holding the
  English and Chinese cues of `compress.vocab.signals` (constraints only from the person);
- gotchas: a failed tool result followed within `FIX_WINDOW` assistant turns by a fix (an
  edit, a write or a command of the same session);
- files: every file the session created, edited, moved or deleted, from tool inputs
  (compress.vocab.calls: editor tools, apply_patch, shell mv/rm/cp …), in first-touch order;
- todos: the latest todo list the agent wrote (TodoWrite-style tools), open and done;
- next steps: "next / TODO / remaining …" sentences of the last assistant replies;
- last_reply: the agent's last text.
Everything is deterministic and linear in the session size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import regex

from compress.model import TEXT, TOOL_USE, Message
from compress.vocab.calls import touched_files
from compress.vocab.injections import person_written
from compress.vocab.signals import has_cue, is_failed_result, telling_error_line
from compress.vocab.tools import ToolKind, command_of, tool_kind
from compress.vocab.touches import CHANGES

FIX_WINDOW = 3  # assistant turns after an error in which an edit/write/command counts as its fix
_SENTENCE_END = regex.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n+")
_CODE_FENCE = regex.compile(r"```[^`]*+```", regex.DOTALL)
_HAN = regex.compile(r"\p{Han}")
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
    fix: str  # what fixed it: "Edit path" / "Bash: command"
    turn: int
    detail: str  # the whole failed result (goes to CCR when long)


@dataclass
class Extraction:
    intents: list[Said] = field(default_factory=list)
    decisions: list[Said] = field(default_factory=list)
    constraints: list[Said] = field(default_factory=list)
    critical: list[Said] = field(default_factory=list)
    next_steps: list[Said] = field(default_factory=list)
    gotchas: list[Gotcha] = field(default_factory=list)
    unresolved_errors: list[Gotcha] = field(default_factory=list)
    files: dict[str, list[str]] = field(default_factory=dict)  # path -> actions in order, no repeats
    todos_open: list[str] = field(default_factory=list)
    todos_done: list[str] = field(default_factory=list)
    last_reply: Said | None = None
    tool_calls: int = 0
    turns: int = 0


def user_text(msg: Message) -> str:
    """What the person wrote in a user message: host-injected segments and notices removed."""
    parts = (person_written(b.text).strip() for b in msg.blocks if b.kind == TEXT)
    return "\n\n".join(part for part in parts if part)


def assistant_text(msg: Message) -> str:
    return "\n\n".join(b.text.strip() for b in msg.blocks if b.kind == TEXT and b.text.strip())


def sentences(text: str) -> list[str]:
    """Prose sentences of `text` (code fences dropped), whitespace collapsed, length-capped."""
    out = []
    for piece in _SENTENCE_END.split(_CODE_FENCE.sub(" ", text)):
        sentence = " ".join(piece.split()).lstrip("-*#>0123456789. ")
        if len(sentence) + len(_HAN.findall(sentence)) >= _MIN_SENTENCE and not sentence.startswith(("|", "`")):
            out.append(sentence[:_MAX_SENTENCE])
    return out


def _fix_label(name: str, tool_input) -> str | None:
    """How a tool call reads as a fix, or None when it is not one (reads, searches, other)."""
    touched = [t for t in touched_files(name, tool_input) if t.action in CHANGES]
    if touched:
        return f"{name} " + ", ".join(t.path for t in touched[:3])
    if tool_kind(name, tool_input) is ToolKind.COMMAND:
        return f"{name}: {command_of(tool_input)[:160]}"
    return None


def _todos(tool_input) -> list[dict] | None:
    todos = tool_input.get("todos") if isinstance(tool_input, dict) else None
    return [t for t in todos if isinstance(t, dict)] if isinstance(todos, list) else None


def _todo_text(todo: dict) -> str:
    return " ".join(str(todo.get("content") or todo.get("activeForm") or todo.get("text") or "").split())


class _Extractor:
    def __init__(self) -> None:
        self.out = Extraction()
        self.pending: list[Gotcha] = []  # errors waiting for a fix, oldest first
        self.seen: set[tuple[str, str]] = set()

    def _add(self, bucket: list[Said], kind: str, said: Said) -> None:
        key = (kind, said.text.lower())
        if key not in self.seen:
            self.seen.add(key)
            bucket.append(said)

    def text(self, text: str, turn: int, role: str) -> None:
        for sentence in sentences(text):
            said = Said(sentence, turn, role)
            if has_cue(sentence, "decision"):
                self._add(self.out.decisions, "d", said)
            if role == "user" and has_cue(sentence, "constraint"):
                self._add(self.out.constraints, "c", said)
            if has_cue(sentence, "critical"):
                self._add(self.out.critical, "k", said)
            if role == "assistant" and has_cue(sentence, "next_step"):
                self._add(self.out.next_steps, "n", said)

    def tool_use(self, name: str, tool_input, turn: int) -> None:
        self.out.tool_calls += 1
        for touch in touched_files(name, tool_input):
            if touch.action not in CHANGES:
                continue
            actions = self.out.files.setdefault(touch.path, [])
            if touch.action not in actions:
                actions.append(touch.action)
        todos = _todos(tool_input)
        if todos is not None:
            self.out.todos_open = [_todo_text(t) for t in todos if t.get("status") != "completed" and _todo_text(t)]
            self.out.todos_done = [_todo_text(t) for t in todos if t.get("status") == "completed" and _todo_text(t)]
        fix = _fix_label(name, tool_input)
        if fix is None:
            return
        for error in self.pending:
            if turn - error.turn <= FIX_WINDOW:
                self.out.gotchas.append(Gotcha(error.error, fix, error.turn, error.detail))
            else:
                self.out.unresolved_errors.append(error)
        self.pending = []

    def failed(self, text: str, turn: int) -> None:
        error = telling_error_line(text)
        self.pending.append(Gotcha(error[:_MAX_SENTENCE], "", turn, text))

    def finish(self) -> Extraction:
        self.out.unresolved_errors += self.pending
        return self.out


def extract(messages: list[Message] | tuple[Message, ...]) -> Extraction:
    ex = _Extractor()
    for msg in messages:
        ex.out.turns = max(ex.out.turns, msg.turn)
        if msg.role == "user":
            text = user_text(msg)
            if text:
                ex.out.intents.append(Said(text, msg.turn, "user"))
                ex.text(text, msg.turn, "user")
        elif msg.role == "assistant":
            text = assistant_text(msg)
            if text:
                ex.out.last_reply = Said(text, msg.turn, "assistant")
                ex.text(text, msg.turn, "assistant")
        for block in msg.blocks:
            if block.kind == TOOL_USE:
                ex.tool_use(block.tool_name or "", block.input, msg.turn)
        for _, block in msg.tool_results():
            if is_failed_result(block):
                ex.failed(block.result_text, msg.turn)
    return ex.finish()
