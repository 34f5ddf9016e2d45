"""What every session reader produces: a `Transcript` of provider-shaped messages.

A reader turns a recorded session into ONE growing list of messages in the shape of a
provider request body (Anthropic Messages or OpenAI Chat Completions) plus the points where
the agent called the model. Must hold:
- `messages[:call.index]` is exactly what the agent sent on that call (minus what the
  recording does not keep, e.g. the host's tool definitions), so `request(k)` is a valid
  body for `compress.pipeline.run` and request k is a message prefix of request k+1;
- every tool call is answered by its result before the next model call (results the
  recording lacks are not invented; an unanswered call can only be the last one);
- unreadable input is counted in `malformed`, never raised.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Usage:
    """Provider-reported input tokens of one model call."""

    input_tokens: int
    cache_read: int
    cache_creation: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.cache_read + self.cache_creation


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model call: it was sent `messages[:index]`.

    after_host_compaction: the host compacted the conversation before this call, so what it
    really sent (and `usage`) differs from the replayed request, which keeps the history.
    """

    index: int
    usage: Usage | None = None
    after_host_compaction: bool = False


@dataclass
class Transcript:
    format: str
    provider: str  # "anthropic" | "openai"
    head: dict[str, Any] = field(default_factory=dict)
    """Request fields besides `messages` (model, system, tools) as far as recorded."""
    messages: list[Any] = field(default_factory=list)
    calls: list[ModelCall] = field(default_factory=list)
    malformed: int = 0
    """Lines or items that could not be read."""
    skipped: Counter = field(default_factory=Counter)
    """Readable items that are not part of the model's context, by kind."""
    host_compactions: int = 0

    def request(self, k: int) -> dict[str, Any]:
        """The body of the k-th model call."""
        return {**self.head, "messages": self.messages[: self.calls[k].index]}

    def whole(self, max_messages: int | None = None) -> dict[str, Any]:
        """The whole session (or its first `max_messages` messages) as one request body."""
        return {**self.head, "messages": self.messages[:max_messages]}


class MessageBuilder:
    """Appends blocks in conversation order and keeps the provider's message rules.

    Anthropic shape: consecutive blocks of one role share a message; tool results go into
    user messages. `start_response()` marks a model call: the next assistant block opens a
    new assistant message even right after another assistant message.
    """

    def __init__(self, transcript: Transcript) -> None:
        self.t = transcript
        self._open_response = False
        self._pending_usage: Usage | None = None
        self._pending_flag = False

    def start_response(self, usage: Usage | None = None, after_host_compaction: bool = False) -> None:
        self._open_response = True
        self._pending_usage = usage
        self._pending_flag = after_host_compaction

    def set_usage(self, usage: Usage | None) -> None:
        """Usage of the current (latest) model call, when the recording gives it afterwards."""
        if usage is not None and self.t.calls:
            last = self.t.calls[-1]
            self.t.calls[-1] = ModelCall(last.index, usage, last.after_host_compaction)

    def _new_call(self) -> None:
        """Record a model call at the current end (a call with nothing to send is not one)."""
        if self.t.messages:
            self.t.calls.append(ModelCall(len(self.t.messages), self._pending_usage, self._pending_flag))
        self._open_response = False
        self._pending_usage = None

    def _needs_new_assistant(self) -> bool:
        messages = self.t.messages
        return self._open_response or not messages or messages[-1]["role"] != "assistant"

    def add(self, role: str, block: dict[str, Any]) -> None:
        messages = self.t.messages
        if role == "assistant" and self._needs_new_assistant():
            self._new_call()
            messages.append({"role": "assistant", "content": [block]})
        elif messages and messages[-1]["role"] == role and isinstance(messages[-1]["content"], list):
            messages[-1]["content"].append(block)
        else:
            messages.append({"role": role, "content": [block]})


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def tool_use_block(tool_id: str, name: str, tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input if tool_input is not None else {}}


def tool_result_block(tool_id: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def thinking_block(text: str, signature: str = "") -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": signature}


def as_text(value: Any) -> str:
    """A recorded tool output as text (strings as they are, anything else as JSON)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    import orjson

    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


class OpenAIBuilder(MessageBuilder):
    """OpenAI Chat shape: an assistant message holds its text and `tool_calls`; each result is a
    `role: "tool"` message. An assistant item after a tool result starts a new model call."""

    def assistant_text(self, text: str) -> None:
        msg = self._assistant()
        msg["content"] = text if not msg.get("content") else f"{msg['content']}\n\n{text}"

    def tool_call(self, call_id: str, name: str, arguments: str) -> None:
        msg = self._assistant()
        msg.setdefault("tool_calls", []).append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})

    def tool_result(self, call_id: str, text: str) -> None:
        self.t.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})

    def message(self, role: str, text: str) -> None:
        messages = self.t.messages
        if role == "user" and messages and messages[-1]["role"] == "user":
            messages[-1]["content"] += "\n\n" + text
        else:
            messages.append({"role": role, "content": text})

    def _assistant(self) -> dict[str, Any]:
        if self._needs_new_assistant():
            self._new_call()
            self.t.messages.append({"role": "assistant", "content": None})
        return self.t.messages[-1]


def iter_jsonl(text: str, transcript: Transcript) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL text; unreadable lines are counted in `malformed`."""
    import orjson

    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError:
            transcript.malformed += 1
            continue
        if isinstance(item, dict):
            out.append(item)
        else:
            transcript.malformed += 1
    return out


def list_field(data: Any, key: str, transcript: Transcript) -> list[Any]:
    """`data[key]` when it is a list; anything else (missing too) counts as one malformed item."""
    value = data.get(key) if isinstance(data, dict) else None
    if isinstance(value, list):
        return value
    transcript.malformed += 1
    return []
