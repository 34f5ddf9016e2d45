"""A plain Anthropic Messages or OpenAI Chat Completions request body (JSON with `messages`).

The body is the last request; every assistant message in it marks an earlier model call, so
the replay sends the prefixes before each assistant message and then the whole body.
"""

from __future__ import annotations

from typing import Any

from compress.formats.requests import InvalidRequest, detect
from compress.formats.sessions.transcript import ModelCall, Transcript

NAME = "request"


def sniff(sample: list[Any]) -> bool:
    return any(isinstance(x, dict) and isinstance(x.get("messages"), list) and "info" not in x for x in sample)


def read_object(data: Any) -> Transcript:
    try:
        provider = detect(data)
    except InvalidRequest:
        return Transcript(NAME, "anthropic", malformed=1)
    messages = list(data["messages"])
    transcript = Transcript(NAME, provider, head={k: v for k, v in data.items() if k != "messages"},
                            messages=messages)
    transcript.calls = [ModelCall(i) for i, m in enumerate(messages)
                        if i and isinstance(m, dict) and m.get("role") == "assistant"]
    if messages:
        transcript.calls.append(ModelCall(len(messages)))
    return transcript
