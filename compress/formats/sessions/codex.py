"""OpenAI Codex CLI rollout JSONL (`~/.codex/sessions/…/rollout-*.jsonl`).

The `response_item` entries are the items Codex sends to the Responses API, so they become an
OpenAI Responses body (`compress.formats.requests.openai_responses`) item for item: messages,
reasoning (encrypted, kept as it is), `function_call` / `custom_tool_call` / `local_shell_call`
and their outputs, anything else untouched. The session's base instructions become the
body's `instructions`, the latest `turn_context` its model. A run of assistant items after any
other item is one model call; its usage is the `last_token_usage` of the `token_count` event
that follows (`input_tokens` includes the cached ones), and its `model_context_window` the
window Codex uses (`Transcript.context_window`: 95% of the model's, 258,400 for GPT-5.4's 272K). A
`compacted` entry is a host compaction: the calls after it sent less than the replayed history.
"""

from __future__ import annotations

from typing import Any

from compress.formats.requests.openai_responses import NAME as RESPONSES
from compress.formats.sessions.builders import ResponsesBuilder
from compress.formats.sessions.transcript import Transcript, iter_jsonl
from compress.formats.usage import Usage

NAME = "codex"
PROVIDER = RESPONSES
_KINDS = ("session_meta", "response_item", "event_msg", "turn_context")  # a tuple: values may be unhashable
_LOCAL_KEYS = ("internal_chat_message_metadata_passthrough",)
"""Item keys Codex keeps in its rollout but does not send (absent from captured requests)."""


def sniff(sample: list[Any]) -> bool:
    return any(isinstance(x, dict) and x.get("type") in _KINDS and isinstance(x.get("payload"), dict) for x in sample)


def starts_turn(line: dict[str, Any]) -> bool:
    """Whether `line` is a person's message (every earlier call was answered before it): where
    `read_session_pieces` may cut a long rollout."""
    payload = line.get("payload")
    return line.get("type") == "response_item" and isinstance(payload, dict) \
        and payload.get("type") == "message" and payload.get("role") == "user"


def _as_sent(item: dict[str, Any]) -> dict[str, Any]:
    if any(k in item for k in _LOCAL_KEYS):
        return {k: v for k, v in item.items() if k not in _LOCAL_KEYS}
    return item


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _usage(payload: dict[str, Any]) -> Usage | None:
    """The usage of the latest model call in a `token_count` event (None: it holds none)."""
    info = payload.get("info")
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    if not isinstance(last, dict):
        return None
    prompt = _count(last.get("input_tokens"))
    cached = min(_count(last.get("cached_input_tokens")), prompt)
    return Usage(input=prompt - cached, cache_read=cached, output=_count(last.get("output_tokens")))


def _window(payload: dict[str, Any]) -> int | None:
    """The context window a `token_count` event reports (None: it reports none)."""
    info = payload.get("info")
    return _count(info.get("model_context_window")) or None if isinstance(info, dict) else None


def read(text: str) -> Transcript:
    transcript = Transcript(NAME, PROVIDER)
    builder = ResponsesBuilder(transcript)
    for line in iter_jsonl(text, transcript):
        payload = line.get("payload")
        if not isinstance(payload, dict):
            transcript.malformed += 1
            continue
        kind = line.get("type")
        if kind == "session_meta" and "instructions" not in transcript.head:
            instructions = payload.get("base_instructions")
            text_value = instructions.get("text") if isinstance(instructions, dict) else instructions
            if isinstance(text_value, str) and text_value:
                transcript.head["instructions"] = text_value
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            transcript.head["model"] = payload["model"]
        elif kind == "response_item":
            builder.item(_as_sent(payload))
        elif kind == "event_msg" and payload.get("type") == "token_count":
            builder.set_usage(_usage(payload))
            transcript.context_window = _window(payload) or transcript.context_window
        elif kind == "compacted":
            transcript.host_compactions += 1
            builder.start_response(after_host_compaction=True)
        else:
            transcript.skipped[f"{kind}"] += 1
    return transcript
