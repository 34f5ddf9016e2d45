"""Retention: what must survive compression, checked on the last request of a replay.

Tool errors' first lines, written or edited paths and the last user request of the raw request
are each visible in the compressed one, or recoverable through a CCR key in it (following
nested markers); also reported for what the last `RECENT_TURNS` assistant turns produced.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.formats.requests import from_provider
from compress.model import TOOL_RESULT, TOOL_USE, Block, Message
from compress.vocab.calls import touched_files
from compress.vocab.signals.errors import first_error_line, is_failed_result
from compress.vocab.touches import CREATE, EDIT, WRITE
from ground.jsonvalues import strings_in

_WRITTEN = frozenset({WRITE, EDIT, CREATE})

RECENT_TURNS = 10
"""Retention is also reported for what the last RECENT_TURNS assistant turns produced."""


@dataclass
class Retained:
    total: int = 0
    visible: int = 0
    recoverable: int = 0
    recent: int = 0
    recent_visible: int = 0

    def add(self, visible: bool, recoverable: bool, recent: bool) -> None:
        self.total += 1
        self.visible += visible
        self.recoverable += visible or recoverable
        self.recent += recent
        self.recent_visible += recent and visible


@dataclass
class Retention:
    errors: Retained = field(default_factory=Retained)
    paths: Retained = field(default_factory=Retained)
    last_request: Retained = field(default_factory=Retained)
    missing: list[str] = field(default_factory=list)

    def _sum(self, name: str) -> int:
        return sum(getattr(r, name) for r in (self.errors, self.paths, self.last_request))

    def fraction(self, name: str, total: str = "total") -> float:
        n = self._sum(total)
        return round(self._sum(name) / n, 4) if n else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"errors": asdict(self.errors), "paths": asdict(self.paths), "last_request": asdict(self.last_request),
                "recoverable": self.fraction("recoverable"), "visible": self.fraction("visible"),
                "recent_visible": self.fraction("recent_visible", "recent"), "missing": self.missing[:20]}


def _visible_text(messages: tuple[Message, ...]) -> str:
    out: list[str] = []
    for msg in messages:
        for b in msg.blocks:
            if b.kind == TOOL_RESULT:
                out.append(b.result_text)
            elif b.kind == TOOL_USE:
                out.extend(strings_in(b.input))
            else:
                out.append(b.text)
    return "\n".join(out)


def _recoverable_text(visible: str, store: CCRStore) -> str:
    """Every original reachable through the CCR keys in `visible`, following nested markers."""
    seen: set[str] = set()
    found: list[str] = []
    todo = [m.key for m in find_markers(visible)]
    while todo:
        key = todo.pop()
        if key in seen:
            continue
        seen.add(key)
        lookup = store.get(key)
        if lookup.ok and lookup.text:
            found.append(lookup.text)
            todo.extend(m.key for m in find_markers(lookup.text))
    return "\n".join(found)


def _error_line(block: Block) -> str | None:
    text = block.result_text
    line = first_error_line(text)
    if line:
        return line
    return next((s.strip() for s in text.splitlines() if s.strip()), None)


def check_retention(raw_body: dict, compressed_body: dict, store: CCRStore) -> Retention:
    """Tool errors' first lines, written or edited paths and the last user request of the raw
    request: are they visible in the compressed one, or recoverable through a CCR key in it?"""
    raw = from_provider(raw_body).messages
    visible = _visible_text(from_provider(compressed_body).messages)
    recoverable = _recoverable_text(visible, store)
    last_turn = raw[-1].turn if raw else 0
    retention = Retention()

    def check(bucket: Retained, item: str, msg: Message, what: str, carriers: tuple[str, ...] = ()) -> None:
        """`carriers`: lines that show the item when present verbatim (a shell command that
        writes a file names it relative to its `cd`, a Windows patch header with backslashes,
        not by the normalised path). Lines, not whole inputs: CCR stores an original with its
        secrets redacted, so a whole body that held one is never found verbatim."""
        seen = item in visible or any(c in visible for c in carriers)
        back = seen or item in recoverable or any(c in recoverable for c in carriers)
        bucket.add(seen, back, last_turn - msg.turn < RECENT_TURNS)
        if not back:
            retention.missing.append(f"{what}: {item[:120]}")

    for msg in raw:
        for b in msg.blocks:
            if b.kind == TOOL_RESULT and is_failed_result(b) and (line := _error_line(b)):
                check(retention.errors, line, msg, "error")
            elif b.kind == TOOL_USE:
                for path in dict.fromkeys(t.path for t in touched_files(b.tool_name, b.input)
                                          if t.action in _WRITTEN):
                    name = path.rsplit("/", 1)[-1]
                    check(retention.paths, path, msg, "path",
                          tuple(line for x in strings_in(b.input) for line in x.splitlines() if name in line))
    person = next((m for m in reversed(raw) if m.has_user_text), None)
    if person is not None:
        text = "\n".join(b.text for b in person.blocks if b.text).strip()
        if text:
            check(retention.last_request, text, person, "last request")
    return retention
