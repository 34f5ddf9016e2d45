"""Three-way merge of a memory file (MEMORY.md, notes.md) entry by entry, for git's merge driver.

Two branches that each add, edit or forget entries merge without conflict markers: the result
is `ours` with the changes `theirs` made since `base` applied to it, entry by entry (an entry is
matched by its `<!-- m-… -->` id):
- added by theirs: added to its type's section, unless ours added an entry of the same type and
  text too (the same fact added on both branches is kept once); the same id added by both
  with different text: both kept, theirs under a new id;
- edited by theirs: ours takes the edit when ours left the entry alone; when both edited it
  differently, both versions are kept (theirs under a new id); when ours forgot it, the edit is
  kept (nothing is lost);
- forgotten by theirs: removed when ours left it alone; kept when ours edited it.
Everything outside entries (headings, prose) comes from the side that changed it; when both
changed it, `merge` says so (`clean` False) and the caller falls back to a line merge.
What must hold: every id in the result is unique; an entry's lines are never split by markers;
merging a file with itself gives it back; the result parses (`memory.markdown.parse`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from memory.entry import Entry, new_id
from memory.markdown import MemoryDocument, parse

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Merged:
    text: str
    clean: bool
    """False: both sides changed the text outside entries; `text` is not to be used."""
    renamed: tuple[tuple[str, str], ...] = ()
    """(old id, new id) of theirs' entries kept beside a different version of ours."""


def _content(entry: Entry) -> tuple:
    return entry.type, entry.text, entry.pinned, entry.tags, entry.created


def _fact(entry: Entry) -> tuple:
    """What makes two entries the same fact, whatever their ids and dates."""
    return entry.type, " ".join(entry.text.split())


def _skeleton(doc: MemoryDocument) -> list[str]:
    """The text outside entries, block by block."""
    return [block.raw for block in doc.blocks if block.entry is None]


def merge(base: str, ours: str, theirs: str, default_type: str | None = None) -> Merged:
    """`ours` with theirs' changes since `base` (see the module docstring)."""
    docs = [parse(text, default_type=default_type) for text in (base, ours, theirs)]
    b, o, t = ({e.id: e for e in doc.entries()} for doc in docs)
    skeletons = [_skeleton(doc) for doc in docs]
    if skeletons[1] != skeletons[0] and skeletons[2] != skeletons[0] and skeletons[1] != skeletons[2]:
        return Merged(ours, clean=False)
    if skeletons[2] != skeletons[0] and skeletons[1] == skeletons[0]:
        # Only theirs changed the text around entries: start from theirs, apply ours' changes.
        return merge(base, theirs, ours, default_type)
    doc, used, renamed = docs[1], set(o) | set(t) | set(b), []
    ours_added = {_fact(e) for i, e in o.items() if i not in b}

    def keep_beside(entry: Entry) -> None:
        salt = 0
        while (fresh := new_id(entry.text, _created(entry), salt)) in used:
            salt += 1
        used.add(fresh)
        renamed.append((entry.id, fresh))
        doc.add(entry.replace(id=fresh))

    for entry_id, theirs_entry in t.items():
        base_entry, ours_entry = b.get(entry_id), o.get(entry_id)
        if base_entry is not None and _content(theirs_entry) == _content(base_entry):
            continue  # theirs left it alone
        if ours_entry is None:
            if base_entry is None and _fact(theirs_entry) in ours_added:
                continue  # ours added the same fact under its own id
            doc.add(theirs_entry)  # added by theirs, or edited by theirs and forgotten by ours
        elif _content(ours_entry) == _content(theirs_entry):
            continue
        elif base_entry is not None and _content(ours_entry) == _content(base_entry):
            doc.replace_entry(entry_id, theirs_entry)
        else:
            keep_beside(theirs_entry)  # both changed it (or both added the id) differently
    for entry_id, base_entry in b.items():
        ours_entry = o.get(entry_id)
        if entry_id not in t and ours_entry is not None and _content(ours_entry) == _content(base_entry):
            doc.remove(entry_id)
    return Merged(doc.text(), clean=True, renamed=tuple(renamed))


def _created(entry: Entry) -> datetime:
    try:
        return datetime.fromisoformat(entry.created) if entry.created else _EPOCH
    except ValueError:
        return _EPOCH
