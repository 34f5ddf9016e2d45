"""Builders that append recorded blocks to a `Transcript` in a provider's message shape.

`AnthropicBuilder` writes Anthropic Messages, `OpenAIChatBuilder` OpenAI Chat Completions,
`ResponsesBuilder` OpenAI Responses items; each records a `ModelCall` where the agent called the model. The `*_block` helpers make Anthropic
content blocks; `as_text` makes a recorded tool output text.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from compress.formats.sessions.transcript import Compaction, ModelCall, Transcript
from compress.formats.usage import Usage


class Builder:
    """Records a model call where an assistant message starts after a non-assistant one, or
    after `start_response()` (a new response right after another assistant message)."""

    def __init__(self, transcript: Transcript) -> None:
        self.t = transcript
        self._open_response = False
        self._pending_usage: Usage | None = None
        self._pending_flag = False
        self._pending_at: float | None = None
        self._split = False

    def split(self) -> None:
        """The next block starts a new message (a host compaction lies between them)."""
        self._split = True

    def compacted(self, summary: Any = None) -> None:
        """The host compacted here: the history it sent next starts with `summary` (a message
        in the transcript's shape; None when the recording lacks it), then what follows."""
        self.split()
        self.t.host_compactions += 1
        self.t.compactions.append(Compaction(len(self.t.messages), len(self.t.calls), summary))

    def start_response(self, usage: Usage | None = None, after_host_compaction: bool = False) -> None:
        self._open_response = True
        self._pending_usage = usage
        self._pending_flag = after_host_compaction

    def stamp(self, at: float | None) -> None:
        """A model call that the next assistant block starts was made at `at` (seconds; None: unknown)."""
        self._pending_at = at

    def set_usage(self, usage: Usage | None) -> None:
        """Usage of the current (latest) model call, when the recording gives it afterwards."""
        if usage is not None and self.t.calls:
            last = self.t.calls[-1]
            self.t.calls[-1] = replace(last, usage=usage)

    def _new_call(self) -> None:
        """Record a model call at the current end (a call with nothing to send is not one)."""
        if self.t.messages:
            self.t.calls.append(ModelCall(len(self.t.messages), self._pending_usage, self._pending_flag,
                                          self._pending_at))
        self._open_response = False
        self._pending_usage = None
        self._pending_at = None

    def _needs_new_assistant(self) -> bool:
        messages = self.t.messages
        return self._open_response or not messages or messages[-1]["role"] != "assistant"


class AnthropicBuilder(Builder):
    """Anthropic shape: consecutive blocks of one role share a message; tool results go into
    user messages."""

    def add(self, role: str, block: dict[str, Any]) -> None:
        messages = self.t.messages
        split, self._split = self._split, False
        if role == "assistant" and (split or self._needs_new_assistant()):
            self._new_call()
            messages.append({"role": "assistant", "content": [block]})
        elif not split and messages and messages[-1]["role"] == role and isinstance(messages[-1]["content"], list):
            messages[-1]["content"].append(block)
        else:
            messages.append({"role": role, "content": [block]})


class OpenAIChatBuilder(Builder):
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


class ResponsesBuilder(Builder):
    """OpenAI Responses shape: one message per item, as the client sends it. An assistant item
    (reasoning, text, a call) after any other item starts a new model call, as one reply of the
    model is a run of assistant items (`compress.model.opens_turn`)."""

    def __init__(self, transcript: Transcript) -> None:
        super().__init__(transcript)
        self._after_assistant = False

    def item(self, raw: dict[str, Any]) -> None:
        from compress.formats.requests.openai_responses import parse_message

        assistant = parse_message(raw).role == "assistant"
        if assistant and (self._open_response or not self._after_assistant):
            self._new_call()
        self._after_assistant = assistant
        self.t.messages.append(raw)


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
