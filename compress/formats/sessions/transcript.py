"""What every session reader produces: a `Transcript` of provider-shaped messages.

A reader turns a recorded session into ONE growing list of messages in one provider request
shape (`compress.formats.requests.SHAPES`) plus the points where the agent called the model.
Must hold:
- `messages[:call.index]` is exactly what the agent sent on that call (minus what the
  recording does not keep, e.g. the host's tool definitions), so `request(k)` is a valid
  body for `compress.runner.pipeline.run` and request k is a message prefix of request k+1;
- every tool call is answered by its result before the next model call (results the
  recording lacks are not invented; an unanswered call can only be the last one);
- unreadable input is counted in `malformed`, never raised.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from compress.formats.requests import SHAPES
from compress.formats.usage import Usage


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model call: it was sent `messages[:index]`.

    after_host_compaction: the host compacted the conversation before this call, so what it
    really sent (and `usage`) differs from the replayed request, which keeps the history.
    """

    index: int
    usage: Usage | None = None
    after_host_compaction: bool = False
    at: float | None = None
    """When the call was made, in seconds since the epoch (None: not recorded)."""


@dataclass(frozen=True, slots=True)
class Compaction:
    """The host compacted the conversation: its later calls (`calls[calls_before:]`) sent
    `summary` (a message in the transcript's shape; None when the recording lacks it) followed
    by `messages[index:]`."""

    index: int
    calls_before: int
    summary: Any = None


@dataclass
class Transcript:
    format: str
    provider: str  # the shape of `messages`: a name in compress.formats.requests.SHAPES
    head: dict[str, Any] = field(default_factory=dict)
    """Request fields besides the messages (model, system, tools) as far as recorded."""
    messages: list[Any] = field(default_factory=list)
    calls: list[ModelCall] = field(default_factory=list)
    malformed: int = 0
    """Lines or items that could not be read."""
    skipped: Counter = field(default_factory=Counter)
    """Readable items that are not part of the model's context, by kind."""
    host_compactions: int = 0
    compactions: list[Compaction] = field(default_factory=list)
    """Where the host compacted, in order (readers that can tell record them)."""
    cache_ttl: str | None = None
    """The lifetime ("5m", "1h") of the prompt cache the provider reported writing, when the
    recording tells (`compress.provider_cache.LIVES`)."""
    context_window: int | None = None
    """The context window, in tokens, the client reported using (Codex's `model_context_window`),
    when the recording tells: the latest it reported."""

    def segments(self) -> list[Transcript]:
        """The histories the host really sent: a new one after each compaction, whose first
        message is the compaction summary. `messages` and `calls` glue them into one history."""
        if not self.compactions:
            return [self]
        out = []
        bounds = [Compaction(0, 0)] + self.compactions + [Compaction(len(self.messages), len(self.calls))]
        for start, end in zip(bounds, bounds[1:]):
            first = [start.summary] if start.summary is not None else []
            shift = len(first) - start.index
            calls = [replace(c, index=c.index + shift) for c in self.calls[start.calls_before:end.calls_before]]
            out.append(Transcript(self.format, self.provider, self.head, first + self.messages[start.index:end.index],
                                  calls, host_compactions=int(bool(first)), cache_ttl=self.cache_ttl,
                                  context_window=self.context_window))
        return out

    def request(self, k: int) -> dict[str, Any]:
        """The body of the k-th model call."""
        return {**self.head, SHAPES[self.provider].MESSAGES_FIELD: self.messages[: self.calls[k].index]}

    def whole(self, max_messages: int | None = None) -> dict[str, Any]:
        """The whole session (or its first `max_messages` messages) as one request body."""
        return {**self.head, SHAPES[self.provider].MESSAGES_FIELD: self.messages[:max_messages]}


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
