"""The canonical model every stage sees: a request as ordered messages of typed blocks.

Provider shapes (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses) are converted in
`compress.formats.requests`; stages never see them. Every canonical object keeps the provider's
original (`raw`) so its shape module can render an unchanged object back byte for byte and keep
fields it does not understand.

Block kinds: text, thinking, redacted_thinking, tool_use, tool_result, image, other.
Roles: user, assistant, tool (OpenAI tool results), system, other (anything unreadable or
unknown, e.g. a Responses item of a type no stage needs).
A system message may sit anywhere in the conversation: Claude Code 2.1 sends the host's and its
hooks' context as `role: "system"` messages inside `messages`, right after the person's prompt.
Objects are immutable; a stage that changes something builds a new object with
`dataclasses.replace` (or the helpers below) and leaves `raw` alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from compress.prefix_scans import PrefixScans

TEXT = "text"
THINKING = "thinking"
REDACTED_THINKING = "redacted_thinking"
TOOL_USE = "tool_use"
TOOL_RESULT = "tool_result"
IMAGE = "image"
OTHER = "other"


@dataclass(frozen=True, slots=True)
class Block:
    """One content block.

    text:      the text of text / thinking blocks.
    tool_id, tool_name, input: of tool_use blocks (`input` is the parsed arguments); a
               tool_result carries the id, and the name and input of its call.
    parts:     of tool_result blocks: their content as blocks (text and image parts).
    is_error:  of tool_result blocks.
    source_input: the arguments as parsed from the provider; `input is source_input`
               means unchanged.
    """

    kind: str
    raw: Any = None
    text: str = ""
    tool_id: str = ""
    tool_name: str = ""
    input: Any = None
    is_error: bool = False
    parts: tuple[Block, ...] = ()
    source_input: Any = field(default=None, compare=False, repr=False)
    call_input: Any = field(default=None, compare=False, repr=False)
    """Of tool_result blocks: the input of the tool_use it answers (set by `from_provider`)."""

    @property
    def result_text(self) -> str:
        """All text of a tool_result, parts joined by newlines."""
        return "\n".join(p.text for p in self.parts if p.kind == TEXT)

    def with_text(self, text: str) -> Block:
        return self if text == self.text else replace(self, text=text)

    def with_result_text(self, text: str) -> Block:
        """A tool_result whose text parts become one text part; other parts (images) stay."""
        if text == self.result_text:
            return self
        parts: list[Block] = []
        placed = False
        for part in self.parts:
            if part.kind != TEXT:
                parts.append(part)
            elif not placed:
                parts.append(part.with_text(text))
                placed = True
        if not placed:
            parts.insert(0, Block(TEXT, raw={"type": "text", "text": text}, text=text))
        return replace(self, parts=tuple(parts))

    def with_input(self, value: Any) -> Block:
        return replace(self, input=value)


@dataclass(frozen=True, slots=True)
class Message:
    """One message. `turn` counts model replies up to and including this one (`number_turns`)."""

    role: str
    blocks: tuple[Block, ...]
    raw: Any
    turn: int = 0
    content_is_str: bool = False
    has_user_text: bool = field(init=False, compare=False, repr=False)
    """A user message that carries something the person wrote (not only tool results)."""
    has_thinking: bool = field(init=False, compare=False, repr=False)
    """An assistant message with thinking blocks (which the provider drops once a person
    writes again)."""
    thinking_blocks: int = field(init=False, compare=False, repr=False)
    """How many of the blocks are thinking or redacted thinking, whatever the role."""

    def __post_init__(self) -> None:
        # Derived once per message: every run asks them of every message, several times over.
        # One plain loop: a full epoch builds every message several times (parse, turns, names,
        # stages), and generator expressions here cost it more than the flags save.
        thinking = 0
        written = False
        for block in self.blocks:
            kind = block.kind
            if kind == THINKING or kind == REDACTED_THINKING:
                thinking += 1
            elif kind == TEXT or kind == IMAGE:
                written = True
        set_flag = object.__setattr__
        set_flag(self, "thinking_blocks", thinking)
        set_flag(self, "has_thinking", thinking > 0 and self.role == "assistant")
        set_flag(self, "has_user_text", written and self.role == "user")

    def with_blocks(self, blocks: tuple[Block, ...] | list[Block]) -> Message:
        blocks = tuple(blocks)
        if len(blocks) == len(self.blocks) and all(a is b for a, b in zip(blocks, self.blocks)):
            return self
        return replace(self, blocks=blocks)

    def tool_results(self) -> Iterator[tuple[int, Block]]:
        for i, b in enumerate(self.blocks):
            if b.kind == TOOL_RESULT:
                yield i, b


@dataclass(frozen=True, slots=True)
class Request:
    provider: str  # a shape name in compress.formats.requests.SHAPES
    messages: tuple[Message, ...]
    raw: dict

    @property
    def model(self) -> str:
        value = self.raw.get("model")
        return value if isinstance(value, str) else ""


class ToolCall(NamedTuple):
    """A tool_use and where it and its result live (result indexes are -1 when unanswered).
    A named tuple: `index_tool_calls` builds one per call and again when its result comes, and a
    tuple is built in half the time of a frozen dataclass (a full epoch indexes every call)."""

    tool_id: str
    name: str
    use_msg: int
    use_block: int
    result_msg: int = -1
    result_block: int = -1


def index_tool_calls(messages: tuple[Message, ...] | list[Message], scans: PrefixScans | None = None,
                     unchanged: int = 0) -> dict[str, ToolCall]:
    """tool id -> ToolCall, pairing each tool_use with the first tool_result of the same id.
    `scans`: checkpoints of earlier indexes (`compress.prefix_scans`) to resume from, and to
    leave one in after the first `unchanged` messages; the result is the same without them."""
    key = "model.index_tool_calls"  # as in remember_tool_calls
    saved: _CallIndex | None = scans.resume(key, messages) if scans is not None else None
    at, calls = (0, {}) if saved is None else (saved.at, dict(saved.calls))
    for mi in range(at, len(messages)):
        if mi == unchanged > at and scans is not None:
            scans.store(key, messages[:mi], _CallIndex(mi, dict(calls)))
        for bi, block in enumerate(messages[mi].blocks):
            kind = block.kind
            if kind == TOOL_USE:
                if block.tool_id not in calls:
                    calls[block.tool_id] = ToolCall(block.tool_id, block.tool_name, mi, bi)
            elif kind == TOOL_RESULT and (call := calls.get(block.tool_id)) is not None and call.result_msg < 0:
                calls[block.tool_id] = ToolCall(call.tool_id, call.name, call.use_msg, call.use_block, mi, bi)
    if scans is not None and unchanged == len(messages) > at:
        remember_tool_calls(scans, messages, calls)
    return calls


def remember_tool_calls(scans: PrefixScans, messages: Sequence[Message], calls: dict[str, ToolCall]) -> None:
    """Leave `calls` as the checkpoint of `index_tool_calls` on all of `messages`. Must hold:
    `calls` is what `index_tool_calls(messages)` gives (e.g. the index of messages that differ from
    the indexed ones only in what no index reads: a result's tool name and call input)."""
    scans.store("model.index_tool_calls", messages, _CallIndex(len(messages), dict(calls)))


@dataclass(frozen=True, slots=True)
class _CallIndex:
    """`index_tool_calls` after its first `at` messages (its dict is never changed once stored)."""

    at: int
    calls: dict[str, ToolCall]


def last_person_index(messages: Sequence[Any]) -> int:
    """Index of the last message a person wrote (`has_user_text`), -1 if none. Thinking of the
    assistant messages before it belongs to completed turns, which the provider drops."""
    return next((i for i in range(len(messages) - 1, -1, -1) if messages[i].has_user_text), -1)


def opens_turn(messages: Sequence[Message], i: int) -> bool:
    """Message i is an assistant message that starts a model reply: the message before it is
    not an assistant message (a run of assistant messages, e.g. the reasoning, text and call
    items of one Responses reply, is one reply; Anthropic merges them alike)."""
    return messages[i].role == "assistant" and (i == 0 or messages[i - 1].role != "assistant")


def number_turns(messages: list[Message], start: int = 0) -> tuple[Message, ...]:
    """Set each message's `turn`: the count of model replies (`opens_turn`) up to and including it.
    The first `start` messages are numbered already (by this function, as a prefix of these)."""
    turn = messages[start - 1].turn if start else 0
    out = messages[:start]
    for i in range(start, len(messages)):
        msg = messages[i]
        if opens_turn(messages, i):
            turn += 1
        out.append(msg if msg.turn == turn else replace(msg, turn=turn))
    return tuple(out)


def newest_user_index(messages: Sequence[Any]) -> int:
    """Index of the newest user message when only system messages follow it, else -1. Claude
    Code 2.1 puts its hooks' context in a system message after the person's prompt, so the
    newest message a stage may append to is not always the last one."""
    for i in range(len(messages) - 1, -1, -1):
        role = messages[i].role
        if role == "user":
            return i
        if role != "system":
            return -1
    return -1
