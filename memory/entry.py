"""Memory entries and search hits: what the library API returns."""

from __future__ import annotations

from datetime import UTC, datetime

import xxhash

from ground.records import Record

# entry type -> MEMORY.md section heading
SECTIONS: dict[str, str] = {
    "constraint": "Constraints",
    "decision": "Decisions",
    "gotcha": "Gotchas",
    "fact": "Facts",
    "note": "Notes",
}
TYPES = tuple(SECTIONS)
SCOPES = ("project", "global")


class Entry(Record):
    """One memory item. `created` is an ISO date (YYYY-MM-DD) or None for hand-written entries."""

    id: str
    type: str
    text: str
    created: str | None = None
    pinned: bool = False
    tags: tuple[str, ...] = ()
    scope: str = "project"
    file: str = ""
    section: str = ""

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "type": self.type,
            "text": self.text,
            "created": self.created,
            "pinned": self.pinned,
            "tags": list(self.tags),
            "scope": self.scope,
            "file": self.file,
            "section": self.section,
        }


class Hit(Record):
    entry: Entry
    score: float
    snippet: str = ""

    def to_dict(self) -> dict:
        return {**self.entry.to_dict(), "score": round(self.score, 4), "snippet": self.snippet}


def new_id(text: str, created: datetime, salt: int = 0) -> str:
    """`m-` + 8 hex digits of xxhash over the text and the exact creation time."""
    return "m-" + xxhash.xxh64_hexdigest(f"{text}\0{created.isoformat()}\0{salt}".encode("utf-8", "surrogatepass"))[:8]


def content_id(entry_type: str, text: str) -> str:
    """Stable id of a hand-written entry that carries no id of its own."""
    return "m-" + xxhash.xxh64_hexdigest(f"{entry_type}\0{text}".encode("utf-8", "surrogatepass"))[:8]


def now() -> datetime:
    return datetime.now(UTC)
