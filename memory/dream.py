"""Dream: consolidate notes.md (where checkpoints offer their decisions, constraints and gotchas)
into the project's MEMORY.md.

What must hold:
- only entries that say the same thing merge: one type, token overlap >= DUPLICATE
  (memory.similar) AND the same particulars (`same_facts`: numbers in order, names, paths); the
  newest wording stays (newest = latest created date, notes after MEMORY.md, later in the file;
  an undated entry was written by a person and counts as newer than any dated one);
- an older decision is dropped when a newer one supersedes it: the newer says "instead of / no
  longer / switched to / 改用 / 不再 …" and shares at least SUPERSEDE_OVERLAP of its terms;
- pinned entries are never changed or removed (a non-pinned entry that says the same as one is dropped);
- memory files (the memory tool's `/memories/…` entries, see memory.files) are left as they are;
- every entry a run removes or merges away is recoverable: the run archives both files as they
  were and the removed entries with the reason (memory.dream_archive; `ctxmill dream --restore`);
- a run that would leave fewer than half of MEMORY.md's entries raises DreamRefused, writes nothing;
- deterministic: the same files give the same result; a second run changes nothing;
- a gotcha folded in from notes.md is one readable line: line breaks written as literal `\\n`
  sequences (an error output JSON-encoded twice, as older checkpoints offered them) and real ones
  become spaces.
`maybe_dream` runs it when due: 7 days since the last run, or notes.md holds more than 20 entries
(state in `.schedule.json` in the project home).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
import regex

from ground.files import atomic_write, private_lock
from memory import api
from memory.config import MemoryConfig
from memory.entry import Entry
from memory.files import file_path
from memory.markdown import MemoryDocument, decode, encode, parse, unique_id
from memory.dream_archive import write_run
from memory.similar import DUPLICATE, overlap, same_facts, terms

SCHEDULE_FILE = ".schedule.json"
DREAM_EVERY = timedelta(days=7)
NOTES_LIMIT = 20
SUPERSEDE_OVERLAP = 0.3
_SUPERSEDES = regex.compile(
    r"(?i)\b(?:instead\s+of|rather\s+than|no\s+longer|not\s+anymore|replac(?:e|es|ed|ing)|switch(?:ed)?\s+(?:to|from)"
    r"|migrat(?:e|ed)\s+(?:to|from)|moved\s+to|deprecat(?:e|ed)|supersed(?:e|es|ed))\b|改用|不再|替换|取代|改为|换成|弃用")


class DreamRefused(RuntimeError):
    """The run would shrink MEMORY.md by more than half; nothing was written."""


@dataclass(frozen=True)
class DreamResult:
    before: int  # entries in MEMORY.md before
    after: int  # entries in MEMORY.md after
    notes: int  # notes.md entries consumed
    merged: int  # entries folded into one that says the same
    superseded: int  # older decisions dropped
    changed: bool
    archive: Path | None  # where the files as they were and the removed entries went


@dataclass
class _Item:
    entry: Entry
    from_notes: bool
    order: tuple  # chronological sort key: larger is newer
    terms: frozenset[str]


_ESCAPED_BREAK = regex.compile(r"(?:\\r)?\\n|\\t")


def readable_gotcha(entry: Entry) -> Entry:
    """A gotcha as one line: literal `\\n` / `\\t` sequences and line breaks become spaces."""
    if entry.type != "gotcha" or ("\\n" not in entry.text and "\\t" not in entry.text and "\n" not in entry.text):
        return entry
    return replace(entry, text=" ".join(_ESCAPED_BREAK.sub(" ", entry.text).split()))


def _items(cfg: MemoryConfig, memory: MemoryDocument, notes: MemoryDocument) -> list[_Item]:
    tok = api.tokenizer(cfg)
    out = []
    taken = memory.ids() | notes.ids()
    for rank, doc in enumerate((memory, notes)):
        for pos, entry in enumerate(doc.entries()):
            if rank == 0 and file_path(entry) is not None:  # a memory file: never merged, dropped or merged into
                continue
            if rank == 1:
                entry = readable_gotcha(entry)
                if entry.id in memory.ids():  # a note with an id MEMORY.md holds: it joins under its own
                    entry = replace(entry, id=unique_id(entry.id, entry.text, taken))
                    taken.add(entry.id)
            # An undated entry was written by a person: newer than any dated one.
            out.append(_Item(entry, rank == 1, (entry.created or "9999-12-31", rank, pos), terms(entry.text, tok)))
    return out


def _newest_first(items: list[_Item]) -> list[_Item]:
    return sorted(items, key=lambda i: i.order, reverse=True)


def _consolidate(items: list[_Item]) -> tuple[list[_Item], dict[str, _Item], list[tuple[Entry, str]], int, int]:
    """(kept items, {dropped MEMORY.md id: the item that replaces it or None}, removed (entry,
    why) pairs, merged, superseded).

    Newest first: an item is kept unless a kept item of its type says the same (pinned ones are
    seen first so they always win) or, for decisions, a kept newer decision supersedes it."""
    kept: list[_Item] = []
    replaced: dict[str, _Item | None] = {}
    removed: list[tuple[Entry, str]] = []
    merged = superseded = 0
    ordered = [i for i in items if i.entry.pinned] + _newest_first([i for i in items if not i.entry.pinned])
    for item in ordered:
        if item.entry.pinned:
            kept.append(item)
            continue
        same = [k for k in kept if k.entry.type == item.entry.type]
        twin = next((k for k in same if overlap(k.terms, item.terms) >= DUPLICATE
                     and same_facts(k.entry.text, item.entry.text)), None)
        newer = None
        if twin is None and item.entry.type == "decision":
            newer = next((k for k in same if not k.entry.pinned and _SUPERSEDES.search(k.entry.text)
                          and overlap(k.terms, item.terms) >= SUPERSEDE_OVERLAP), None)
        if twin is None and newer is None:
            kept.append(item)
            continue
        merged += twin is not None
        superseded += newer is not None
        removed.append((item.entry, f"merged into {twin.entry.id} (same words, numbers and names)" if twin
                        else f"superseded by {newer.entry.id}"))
        if not item.from_notes:
            replaced[item.entry.id] = twin  # the twin takes this entry's place; superseded ones just go
    return kept, replaced, removed, merged, superseded


def _rewrite(memory: MemoryDocument, kept: list[_Item], replaced: dict[str, _Item | None]) -> None:
    placed: set[str] = {i.entry.id for i in kept if not i.from_notes}
    for old_id, twin in sorted(replaced.items()):
        if twin is not None and twin.from_notes and twin.entry.id not in placed:
            memory.replace_entry(old_id, twin.entry)
            placed.add(twin.entry.id)
        else:
            memory.remove(old_id)
    for item in sorted((i for i in kept if i.from_notes and i.entry.id not in placed), key=lambda i: i.order):
        memory.add(item.entry)


def _notes_left(notes: MemoryDocument) -> str:
    """notes.md without its entries; empty when only headings and blank lines would remain."""
    for entry in notes.entries():
        notes.remove(entry.id)
    return "" if all(b.level or not b.raw.strip() for b in notes.blocks) else notes.text()


def dream(cfg: MemoryConfig) -> DreamResult:
    """Consolidate the project's notes.md into MEMORY.md (see the module docstring)."""
    home = cfg.project_home
    memory_path, notes_path = home / api.MEMORY_FILE, home / api.NOTES_FILE
    with private_lock(home / ".dream.lock"), api.lock(memory_path), api.lock(notes_path):
        memory_text = decode(memory_path.read_bytes()) if memory_path.exists() else ""
        notes_text = decode(notes_path.read_bytes()) if notes_path.exists() else ""
        memory = parse(memory_text, "project", str(memory_path))
        notes = parse(notes_text, "project", str(notes_path), "note")
        before, consumed = len(memory.entries()), len(notes.entries())
        kept, replaced, removed, merged, superseded = _consolidate(_items(cfg, memory, notes))
        _rewrite(memory, kept, replaced)
        after = len(memory.entries())
        if before and after * 2 < before:
            raise DreamRefused(f"dream would shrink MEMORY.md from {before} to {after} entries (more than half); "
                               "nothing was changed")
        new_memory, new_notes = memory.text(), _notes_left(notes)
        changed = new_memory != memory_text or new_notes != notes_text
        archive = None
        if changed:
            archive = write_run(cfg, removed, "Dream")
            atomic_write(memory_path, encode(new_memory))
            if notes_path.exists():
                atomic_write(notes_path, encode(new_notes))
    return DreamResult(before, after, consumed, merged, superseded, changed, archive)


def _schedule(home: Path) -> dict:
    try:
        state = orjson.loads((home / SCHEDULE_FILE).read_bytes())
        return state if isinstance(state, dict) else {}
    except (OSError, orjson.JSONDecodeError):
        return {}


def _save_schedule(home: Path, state: dict) -> None:
    atomic_write(home / SCHEDULE_FILE, orjson.dumps(state, option=orjson.OPT_INDENT_2))


def _parse_time(value) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def due(cfg: MemoryConfig, now: datetime | None = None) -> bool:
    """7 days since the last dream (or since ctxmill first looked), or more than 20 notes."""
    now = now or datetime.now(timezone.utc)
    home = cfg.project_home
    if not home.is_dir():
        return False
    state = _schedule(home)
    since = _parse_time(state.get("last_dream")) or _parse_time(state.get("since"))
    if since is None:
        _save_schedule(home, {**state, "since": now.isoformat()})
        since = now
    if now - since >= DREAM_EVERY:
        return True
    notes = home / api.NOTES_FILE
    return notes.exists() and len(parse(decode(notes.read_bytes()), default_type="note").entries()) > NOTES_LIMIT


def record_run(cfg: MemoryConfig, result: DreamResult | None, error: str | None = None,
               now: datetime | None = None) -> None:
    now = now or datetime.now(timezone.utc)
    state = _schedule(cfg.project_home)
    state["last_dream"] = now.isoformat()
    state["last_result"] = error or (f"{result.before} -> {result.after} entries, {result.notes} notes, "
                                     f"{result.merged} merged, {result.superseded} superseded")
    _save_schedule(cfg.project_home, state)


def maybe_dream(cfg: MemoryConfig, now: datetime | None = None) -> DreamResult | None:
    """Dream when due; a refused run is recorded (so it is not retried at every start) and re-raised."""
    if not due(cfg, now):
        return None
    try:
        result = dream(cfg)
    except DreamRefused as exc:
        record_run(cfg, None, str(exc), now)
        raise
    record_run(cfg, result, now=now)
    return result
