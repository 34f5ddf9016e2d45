"""Lines the agent later needed, and the re-reads a side pays for losing them.

For every model call k the model's reply is known. Each line (stripped, at least
`MIN_LINE_CHARS` characters) of the old text of the reply's edit calls
and patches (`compress.vocab.calls.copied_texts`) that was present in raw request k is a line the agent
copied out of its context. A side *kept* it when it is still present verbatim in that side's
request k. Its source is the newest raw message holding it; its age, the number of messages
after that source in request k (bucketed 0-3 / 4-10 / 11+).

Effective cost: when a call loses a needed line whose source the agent does not hold from an
earlier re-read, the side pays a re-read: one more call reading its request k from the cache
(read price × its tokens), writing each such source message again (write price × its tokens)
and carrying it through the next `CARRY_CALLS` calls (read price × its tokens each).

Must hold: one re-read of a source brings back all its lines for as long as it is carried, so
calls k+1..k+CARRY_CALLS that lose lines of it pay nothing more; after that the copy is cut
again and the next loss pays another re-read. Each side is counted by the same rule, and a new
history (after a host compaction) holds nothing (`Needed.new_history`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from compress.model import TOOL_USE, Message
from compress.stagekit.memo import PerObject
from compress.vocab.calls import copied_texts
from ground.jsonvalues import strings_in

MIN_LINE_CHARS = 12
CARRY_CALLS = 5
AGE_BUCKETS = ("0-3", "4-10", "11+")


def age_bucket(age: int) -> str:
    return AGE_BUCKETS[0] if age <= 3 else AGE_BUCKETS[1] if age <= 10 else AGE_BUCKETS[2]


def copied_lines(reply: Message | None) -> list[str]:
    """The distinct lines (stripped, long enough) of the old texts the reply's edits replace."""
    if reply is None or reply.role != "assistant":
        return []
    lines = (line.strip() for b in reply.blocks if b.kind == TOOL_USE
             for text in copied_texts(b.tool_name, b.input) for line in text.splitlines())
    return list(dict.fromkeys(line for line in lines if len(line) >= MIN_LINE_CHARS))


@dataclass(frozen=True, slots=True)
class Need:
    """One line the reply to a call copied, with the raw message it came from."""

    line: str
    source: int
    """Index of the newest raw message holding the line."""
    bucket: str


def needs_of_call(raw_messages: Sequence[Any], reply: Message | None, text: Callable[[Any], str]) -> list[Need]:
    """The copied lines of `reply` present in the raw request `raw_messages` (provider-shaped)."""
    lines = copied_lines(reply)
    if not lines:
        return []
    texts = [text(m) for m in raw_messages]
    needs = []
    for line in lines:
        source = next((i for i in range(len(texts) - 1, -1, -1) if line in texts[i]), None)
        if source is not None:
            needs.append(Need(line, source, age_bucket(len(texts) - 1 - source)))
    return needs


@dataclass
class Needed:
    """Needed lines of one side: counted overall and by age bucket, and the re-reads they cost."""

    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(AGE_BUCKETS, 0))
    kept: dict[str, int] = field(default_factory=lambda: dict.fromkeys(AGE_BUCKETS, 0))
    calls_with_loss: int = 0
    rereads: int = 0
    """Source messages re-read (a call that re-reads two sources counts two)."""
    reread_cost: float = 0.0
    held: dict[int, int] = field(default_factory=dict, repr=False)
    """Source -> the last call through which its re-read is carried (this history's sources)."""

    def add(self, needs: list[Need], side_text: str, reread: Callable[[set[int]], float], call: int) -> None:
        """Count `needs` of call number `call` against `side_text` (the side's request as one
        text); `reread(sources)` prices re-reading the lost sources the agent does not hold."""
        lost: set[int] = set()
        for need in needs:
            self.total[need.bucket] += 1
            if need.line in side_text:
                self.kept[need.bucket] += 1
            else:
                lost.add(need.source)
        if not lost:
            return
        self.calls_with_loss += 1
        fetch = {source for source in lost if self.held.get(source, -1) < call}  # not held through this call
        if fetch:
            self.rereads += len(fetch)
            self.reread_cost += reread(fetch)
            self.held.update(dict.fromkeys(fetch, call + CARRY_CALLS))

    def new_history(self) -> None:
        """A new history starts (its message indices are new sources): no re-read is held."""
        self.held.clear()

    def merge(self, other: Needed) -> None:
        for bucket in AGE_BUCKETS:
            self.total[bucket] += other.total[bucket]
            self.kept[bucket] += other.kept[bucket]
        self.calls_with_loss += other.calls_with_loss
        self.rereads += other.rereads
        self.reread_cost += other.reread_cost

    def fraction(self, bucket: str | None = None) -> float:
        """Kept / needed, overall or in one age bucket (1.0 when nothing was needed)."""
        buckets = AGE_BUCKETS if bucket is None else (bucket,)
        total = sum(self.total[b] for b in buckets)
        return round(sum(self.kept[b] for b in buckets) / total, 4) if total else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"total": dict(self.total), "kept": dict(self.kept), "fraction": self.fraction(),
                "by_age": {b: self.fraction(b) for b in AGE_BUCKETS},
                "calls_with_loss": self.calls_with_loss, "rereads": self.rereads, "reread_cost": round(self.reread_cost, 1)}


class MessageTexts:
    """Every string of a provider-shaped message joined by newlines, once per message object."""

    def __init__(self) -> None:
        self._memo: PerObject[Any, str] = PerObject(lambda m: "\n".join(strings_in(m)))

    def __call__(self, message: Any) -> str:
        return self._memo(message)

    def request(self, messages: Sequence[Any]) -> str:
        return "\n".join(self(m) for m in messages)
