"""A plain provider request body (Anthropic Messages or OpenAI Chat Completions JSON).

The body is the last request; every assistant message in it marks an earlier model call, so
the replay sends the prefixes before each assistant message and then the whole body.
"""

from __future__ import annotations

from typing import Any

from compress.formats.requests import SHAPES, InvalidRequest, detect
from compress.formats.sessions.transcript import ModelCall, Transcript

NAME = "request"


def sniff(sample: list[Any]) -> bool:
    return any(isinstance(x, dict) and "info" not in x and _shape(x) is not None for x in sample)


def _shape(data: Any) -> str | None:
    try:
        return detect(data)
    except InvalidRequest:
        return None


def read_object(data: Any) -> Transcript:
    provider = _shape(data)
    if provider is None:
        return Transcript(NAME, "anthropic", malformed=1)
    field = SHAPES[provider].MESSAGES_FIELD
    messages = list(data[field])
    transcript = Transcript(NAME, provider, head={k: v for k, v in data.items() if k != field}, messages=messages)
    transcript.calls = [ModelCall(i) for i, m in enumerate(messages)
                        if i and isinstance(m, dict) and m.get("role") == "assistant"]
    if messages:
        transcript.calls.append(ModelCall(len(messages)))
    return transcript
