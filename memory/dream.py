"""Dream: consolidate notes.md (where checkpoints offer their decisions, constraints and gotchas)
into the project's MEMORY.md.

What must hold:
- only entries that say the same thing merge: one type, token overlap >= DUPLICATE
  (memory.similar) AND the same particulars (`same_facts`: numbers in order, names, paths) AND
  the kept wording holds nearly all the dropped one's terms (`says_as_much`); the
  newest wording stays (newest = latest created date, notes after MEMORY.md, later in the file;
  an undated entry was written by a person and counts as newer than any dated one);
- an older decision is dropped only when a newer decision replaces the same choice: it names a
  term of the older as what it replaces ("instead of X", "no longer use X", "switched from X",
  "不再使用 X"…) and covers most of the older's other terms (memory.statements.Replacement);
  "moved to …" or "switched to …" alone replaces nothing;
- a note is folded in only when it is a complete statement about this project: narration,
  fragments, host-generic errors and other machines' paths are left out (memory.statements.flaw)
  and archived like any removed entry; entries already in MEMORY.md are never left out;
- pinned entries are never changed or removed (a non-pinned entry that says the same as one is dropped);
- memory files (the memory tool's `/memories/…` entries, see memory.files) are left as they are;
- ids stay unique: a note whose id MEMORY.md holds joins under a new one (memory.markdown.unique_id);
- every entry a run removes or merges away is recoverable: the run archives both files as they
  were and the removed entries with the reason (memory.dream_archive; `ctxmill dream --restore`);
- a run that would leave fewer than half of MEMORY.md's entries raises DreamRefused, writes nothing;
  so does a run past its `deadline` (DreamGaveUp);
- `dry_run` computes the same result (what would be added and removed, and why) and writes nothing;
- deterministic: the same files give the same result; a second run changes nothing;
- scales: candidates for a merge are found through their rarest terms and candidates for a
  replacement through the terms decisions name, not by comparing every pair;
- a gotcha folded in from notes.md is one readable line: line breaks written as literal `\\n`
  sequences (an error output JSON-encoded twice, as older checkpoints offered them) and real ones
  become spaces.
`maybe_dream` runs it when due: 7 days since the last run, or notes.md holds more than 20 entries
(state in `.schedule.json` in the project home). The schedule moves on before the run starts, so a
run that gives up or is killed is not retried at every session start.
"""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import regex

from ground.files import atomic_write, private_lock
from ground.home_files import RECORD_BYTES, read_home_file
from memory import api
from memory.config import MemoryConfig
from memory.dream_archive import write_run
from memory.entry import Entry
from memory.files import file_path
from memory.markdown import MemoryDocument, decode, encode, parse, unique_id
from memory.reading import read_file, read_file_or_skip
from memory.similar import LOST_SHARE, numbers_in, says_as_much, terms
from memory.statements import Replacement, flaw, probe

SCHEDULE_FILE = ".schedule.json"
DREAM_EVERY = timedelta(days=7)
NOTES_LIMIT = 20
RETRY_AFTER = timedelta(days=1)
HOOK_DEADLINE_S = 4.0
"""A scheduled run gives up after this long by default: session start gives the consolidation 5 s
(ctxmill.commands.hook.BUDGETS) and a run that gives up says so in the schedule."""


class DreamRefused(RuntimeError):
    """The run would shrink MEMORY.md by more than half; nothing was written."""


class DreamGaveUp(DreamRefused):
    """The run passed its deadline; nothing was written."""


@dataclass(frozen=True)
class DreamResult:
    before: int  # entries in MEMORY.md before
    after: int  # entries in MEMORY.md after
    notes: int  # notes.md entries consumed
    merged: int  # entries folded into one that says the same
    superseded: int  # older decisions dropped
    changed: bool
    archive: Path | None  # where the files as they were and the removed entries went
    added: tuple[Entry, ...] = ()  # entries MEMORY.md gains (as stored)
    removed: tuple[tuple[Entry, str], ...] = ()  # (entry, why) for each entry of either file that goes
    left_out: int = 0  # notes not folded in: not a complete statement about this project
    dry_run: bool = False


@dataclass
class _Item:
    entry: Entry
    from_notes: bool
    order: tuple  # chronological sort key: larger is newer
    terms: frozenset[str]
    replaces: Replacement | None = field(default=None)  # for decisions: the choice it names as replaced
    probe: list[str] = field(default_factory=list)  # its rarest terms (see _Kept)
    numbers: tuple[str, ...] = ()  # the numbers it states, in order


_ESCAPED_BREAK = regex.compile(r"(?:\\r)?\\n|\\t")


def readable_gotcha(entry: Entry) -> Entry:
    """A gotcha as one line: literal `\\n` / `\\t` sequences and line breaks become spaces."""
    if entry.type != "gotcha" or ("\\n" not in entry.text and "\\t" not in entry.text and "\n" not in entry.text):
        return entry
    return entry.replace(text=" ".join(_ESCAPED_BREAK.sub(" ", entry.text).split()))


def _items(cfg: MemoryConfig, memory: MemoryDocument, notes: MemoryDocument) -> tuple[list[_Item], list[tuple[Entry, str]]]:
    """The entries to consolidate, and the notes left out with why."""
    tok = api.tokenizer(cfg)
    out, left_out = [], []
    held = memory.ids()
    taken = held | notes.ids()
    root, home = cfg.project_home.resolve().parent, Path.home()
    for rank, doc in enumerate((memory, notes)):
        for pos, entry in enumerate(doc.entries()):
            if rank == 0 and file_path(entry) is not None:  # a memory file: never merged, dropped or merged into
                continue
            if rank == 1:
                entry = readable_gotcha(entry)
                why = flaw(entry.text, entry.type, root, home)
                if why:
                    left_out.append((entry, f"left out: {why}"))
                    continue
                if entry.id in held:  # a note with an id MEMORY.md holds: it joins under its own
                    entry = entry.replace(id=unique_id(entry.id, entry.text, taken))
                    taken.add(entry.id)
            replaces = Replacement.of(entry.text, tok.tokens) if entry.type == "decision" else None
            # An undated entry was written by a person: newer than any dated one.
            out.append(_Item(entry, rank == 1, (entry.created or "9999-12-31", rank, pos), terms(entry.text, tok),
                             replaces if replaces and replaces.named else None))
    return out, left_out


def _newest_first(items: list[_Item]) -> list[_Item]:
    return sorted(items, key=lambda i: i.order, reverse=True)


class _Kept:
    """The items kept so far, indexed: by type, the numbers they state (twins state the same, see
    `same_facts`) and each of their terms, probed with an item's `probe` terms, its rarest
    floor(LOST_SHARE * n) + 1 (a kept item that says as much holds all but under LOST_SHARE of
    its n terms, so one of any that many); and, for decisions that replace a choice, by the terms
    they name with the terms a decision they replace must share with them (memory.statements.probe)."""

    def __init__(self, items: list[_Item]):
        frequency = Counter(t for item in items for t in item.terms)
        self._rarity = {t: (n, t) for t, n in frequency.items()}
        self.items: list[_Item] = []
        self._by_term: dict[tuple[str, tuple, str], list[int]] = defaultdict(list)
        self._by_replaced: dict[tuple[str, str], list[int]] = defaultdict(list)
        self._named: set[str] = set()
        for item in items:
            item.numbers = numbers_in(item.entry.text)
            ordered = sorted(item.terms, key=self._rarity.__getitem__)
            item.probe = ordered[: math.floor(LOST_SHARE * len(ordered)) + 1] if ordered else []

    def _rank(self, term: str) -> tuple:
        return self._rarity.get(term, (0, term))

    def add(self, item: _Item) -> None:
        at = len(self.items)
        self.items.append(item)
        for term in item.terms:
            self._by_term[item.entry.type, item.numbers, term].append(at)
        if item.replaces is not None and not item.entry.pinned:
            self._named |= item.replaces.named
            for key in item.replaces.keys(item.terms, self._rank):
                self._by_replaced[key].append(at)

    def twin(self, item: _Item) -> _Item | None:
        """The first kept item of the same type that says the same thing."""
        kind, numbers = item.entry.type, item.numbers
        found = {at for term in item.probe for at in self._by_term.get((kind, numbers, term), ())}
        return next((self.items[at] for at in sorted(found)
                     if says_as_much(self.items[at].terms, self.items[at].entry.text, item.terms, item.entry.text)), None)

    def replacer(self, item: _Item) -> _Item | None:
        """The first kept decision that replaces the choice `item` states."""
        found = {at for named in item.terms & self._named for key in probe(item.terms, named, self._rank)
                 for at in self._by_replaced.get(key, ())}
        return next((self.items[at] for at in sorted(found) if self.items[at].entry.type == item.entry.type
                     and (stated := self.items[at].replaces) is not None
                     and stated.replaces(self.items[at].terms, item.terms)), None)


def _consolidate(items: list[_Item], deadline: float | None = None
                 ) -> tuple[list[_Item], dict[str, _Item | None], list[tuple[Entry, str]], int, int]:
    """(kept items, {dropped MEMORY.md id: the item that replaces it or None}, removed (entry,
    why) pairs, merged, superseded).

    Newest first: an item is kept unless, for decisions, a kept newer decision replaces its choice,
    or a kept item of its type says the same (pinned ones are seen first so they always win)."""
    kept = _Kept(items)
    replaced: dict[str, _Item | None] = {}
    removed: list[tuple[Entry, str]] = []
    merged = superseded = 0
    ordered = [i for i in items if i.entry.pinned] + _newest_first([i for i in items if not i.entry.pinned])
    for n, item in enumerate(ordered):
        if deadline is not None and n % 512 == 0 and time.monotonic() > deadline:
            raise DreamGaveUp(f"dream gave up after {n:,} of {len(ordered):,} entries (time limit); nothing was changed")
        if item.entry.pinned:
            kept.add(item)
            continue
        newer = kept.replacer(item) if item.entry.type == "decision" else None
        twin = kept.twin(item) if newer is None else None
        if twin is None and newer is None:
            kept.add(item)
            continue
        merged += twin is not None
        superseded += newer is not None
        by = twin or newer
        assert by is not None, "an item neither added nor merged is superseded"
        removed.append((item.entry, f"merged into {by.entry.id} (same words, numbers and names)" if twin
                        else f"superseded by {by.entry.id}"))
        if not item.from_notes:
            replaced[item.entry.id] = twin  # the twin takes this entry's place; superseded ones just go
    return kept.items, replaced, removed, merged, superseded


def _rewrite(memory: MemoryDocument, kept: list[_Item], replaced: dict[str, _Item | None]) -> None:
    placed: set[str] = {i.entry.id for i in kept if not i.from_notes}
    changes: dict[str, Entry | None] = {}
    for old_id, twin in sorted(replaced.items()):
        if twin is not None and twin.from_notes and twin.entry.id not in placed:
            changes[old_id] = twin.entry
            placed.add(twin.entry.id)
        else:
            changes[old_id] = None
    memory.apply(changes)
    memory.add_all([i.entry for i in sorted((i for i in kept if i.from_notes and i.entry.id not in placed),
                                            key=lambda i: i.order)])


def _notes_left(notes: MemoryDocument) -> str:
    """notes.md without its entries; empty when only headings and blank lines would remain."""
    notes.apply(dict.fromkeys(notes.ids()))
    return "" if all(b.level or not b.raw.strip() for b in notes.blocks) else notes.text()


def dream(cfg: MemoryConfig, dry_run: bool = False, deadline: float | None = None) -> DreamResult:
    """Consolidate the project's notes.md into MEMORY.md (see the module docstring); `deadline`
    is a `time.monotonic()` value."""
    home = cfg.project_home
    memory_path, notes_path = home / api.MEMORY_FILE, home / api.NOTES_FILE
    with private_lock(home / ".dream.lock"), api.lock(memory_path), api.lock(notes_path):
        memory_text, notes_text = decode(read_file(memory_path)), decode(read_file(notes_path))
        memory = parse(memory_text, "project", str(memory_path))
        notes = parse(notes_text, "project", str(notes_path), "note")
        before_ids = memory.ids()
        before, consumed = len(before_ids), len(notes.entries())
        items, left_out = _items(cfg, memory, notes)
        kept, replaced, removed, merged, superseded = _consolidate(items, deadline)
        _rewrite(memory, kept, replaced)
        after = len(memory.entries())
        if before and after * 2 < before:
            raise DreamRefused(f"dream would shrink MEMORY.md from {before} to {after} entries (more than half); "
                               "nothing was changed")
        removed = left_out + removed
        added = tuple(e for e in memory.entries() if e.id not in before_ids)
        new_memory, new_notes = memory.text(), _notes_left(notes)
        changed = new_memory != memory_text or new_notes != notes_text
        archive = None
        if changed and not dry_run:
            archive = write_run(cfg, removed, "Dream")
            atomic_write(memory_path, encode(new_memory))
            if notes_path.exists():
                atomic_write(notes_path, encode(new_notes))
    return DreamResult(before, after, consumed, merged, superseded, changed, archive, added, tuple(removed),
                       len(left_out), dry_run)


def _schedule(home: Path) -> dict:
    try:
        state = orjson.loads(read_home_file(home, SCHEDULE_FILE, RECORD_BYTES) or b"{}")
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
    """7 days since the last dream started (or since ctxmill first looked), or more than 20 notes
    and a day since the last one started (a run that gave up is not retried at every start)."""
    now = now or datetime.now(UTC)
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
    if "last_dream" in state and now - since < RETRY_AFTER:
        return False
    notes = home / api.NOTES_FILE
    return len(parse(decode(read_file_or_skip(notes)), default_type="note").entries()) > NOTES_LIMIT


def record_run(cfg: MemoryConfig, result: DreamResult | None, error: str | None = None,
               now: datetime | None = None) -> None:
    now = now or datetime.now(UTC)
    state = _schedule(cfg.project_home)
    state["last_dream"] = now.isoformat()
    if error is None and result is not None:
        state["last_result"] = (f"{result.before} -> {result.after} entries, {result.notes} notes, "
                                f"{result.merged} merged, {result.superseded} superseded")
    else:
        state["last_result"] = error or "no result"
    _save_schedule(cfg.project_home, state)


def maybe_dream(cfg: MemoryConfig, now: datetime | None = None, limit_s: float | None = HOOK_DEADLINE_S
                ) -> DreamResult | None:
    """Dream when due; the schedule moves on first (a run killed midway is not retried at every
    start), a refused run or one that gives up after `limit_s` is recorded and re-raised."""
    if not due(cfg, now):
        return None
    record_run(cfg, None, "started; did not finish", now)
    try:
        result = dream(cfg, deadline=None if limit_s is None else time.monotonic() + limit_s)
    except DreamRefused as exc:
        record_run(cfg, None, str(exc), now)
        raise
    record_run(cfg, result, now=now)
    return result
