"""A plain provider request body (any shape in `compress.formats.requests.SHAPES`).

The body is the last request; every model reply in it (an assistant message after a
non-assistant one, `compress.model.opens_turn`) marks an earlier model call, so the replay
sends the prefixes before each reply and then the whole body.
"""

from __future__ import annotations

from typing import Any

from compress.formats.requests import SHAPES, InvalidRequest, detect
from compress.formats.sessions.transcript import ModelCall, Transcript
from compress.model import opens_turn

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
    shape = SHAPES[provider]
    messages = list(data[shape.MESSAGES_FIELD])
    head = {k: v for k, v in data.items() if k != shape.MESSAGES_FIELD}
    transcript = Transcript(NAME, provider, head=head, messages=messages)
    parsed = [shape.parse_message(m) for m in messages]
    transcript.calls = [ModelCall(i) for i in range(1, len(parsed)) if opens_turn(parsed, i)]
    if messages:
        transcript.calls.append(ModelCall(len(messages)))
    return transcript
