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
- gotchas: a failed call and what fixed it (`memory.fixes.pair_fixes`: the fix is chosen among
  the calls after it; a call that only looks never fixes). Errors left unfixed are
  `unresolved_errors`. Calls the person refused or the host blocked are not errors; they are
  kept apart (`refusals`);
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

import regex

from compress.model import TEXT, TOOL_RESULT, TOOL_USE, Message
from compress.vocab.calls import touched_files
from compress.vocab.injections import answers, person_written, refusal
from compress.vocab.signals.cues import has_cue
from compress.vocab.signals.errors import is_failed_result
from compress.vocab.signals.statements import (
    accepts,
    introduces_steps,
    proposes,
    refers_back,
    states_constraint,
    states_decision,
    states_next_step,
)
from compress.vocab.tools import ToolKind, command_of, tool_kind
from compress.vocab.touches import CHANGES
from memory.fixes import Call, Gotcha, pair_fixes

_SENTENCE_END = regex.compile(r"(?<=[.!?])\s+|(?<=[。！？；])|\n+")
_SOFT_WRAP = regex.compile(r"(?<=[\w,(\-])[ \t]*\n[ \t]*(?=[a-z(])")
_CODE_FENCE = regex.compile(r"```[^`]*+```", regex.DOTALL)
_LIST_ITEM = regex.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*\S)")
_HAN = regex.compile(r"\p{Han}")
_NO_CHOICE = regex.compile(r"(?i)not sure|you decide|up to you|随便|都行|你决定")
_SIBLING = regex.compile(r"(?i)^\s*(?:<tool_use_error>)?\s*Sibling tool call errored")
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


def _scratch(path: str) -> bool:
    """A scratch file a shell command writes: under a temporary directory or a hidden folder of
    the home directory (a tool's state, e.g. `~/.superstack/telemetry.jsonl`), or a shell variable."""
    path = path.replace("\\", "/")
    return path.startswith(("$", "%", "~/.")) or path.startswith(_TEMP_DIRS)


class _Extractor:
    def __init__(self) -> None:
        self.out = Extraction()
        self.seen: set[tuple[str, str]] = set()
        self.calls: dict[str, Call] = {}
        self.order: list[Call] = []
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
        call = Call(name, tool_input, turn, kind, command, changes)
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
        self.out.gotchas, self.out.unresolved_errors = pair_fixes(self.order)
        return self.out


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
