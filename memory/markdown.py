"""MEMORY.md: typed entries under `##` sections, parsed losslessly.

File format (a person may edit it freely):

    # Memory

    ## Decisions

    - Use BM25 with identifier splitting for memory search. <!-- m-1a2b3c4d 2025-06-01 pinned #search -->
    - A second entry; continuation lines are indented by two spaces
      like this one. <!-- m-9f8e7d6c 2025-06-02 -->

Sections Constraints, Decisions, Gotchas, Facts and Notes (any case, singular or plural) hold
entries: each top-level bullet with its indented continuation lines. The trailing HTML comment
carries the id, the created date, `pinned` and `#tags`; a bullet without it is a hand-written
entry whose id is derived from its type and text. Everything else (other headings, prose, code
fences) is kept as it is.

What must hold: `parse(text).text() == text` for any text whose entry ids are unique, and an
entry added with `add` parses back to the same entry. Edits touch only the lines of the entries
they add or remove. Ids are unique within a document: an entry whose id an earlier entry already
has (a copy-pasted line) gets a new one on read, derived from the old id, its text and the ids
taken (so every read of the same text gives the same ids), and `text()` carries it; `add` and
`replace_entry` never give a second entry an id the document holds.

Files are bytes (read bounded: `memory.reading`): `decode` never fails (bytes that are not UTF-8
become lone surrogates, as `surrogateescape` does) and `encode` gives those bytes back, so a
rewrite keeps bytes it could not read. Entry texts show such bytes as U+FFFD.
"""

from __future__ import annotations

import re

import xxhash

from ground.ascii_first import Pattern
from memory.entry import SECTIONS, Entry, content_id

_HEADING = re.compile(r"(#{1,6})[ \t]+(.*?)[ \t#]*\r?\n?\Z")
_BULLET = re.compile(r"[-*+][ \t]")
_FENCE = re.compile(r"(```|~~~)")
# fields never hold "<": an unclosed "<!-- m-…" in the text stays text
_META = Pattern(r"[ \t]*<!--[ \t]*(m-[0-9a-f]{4,16})\b([^<>]*?)-->")
_DATE = Pattern(r"\d{4}-\d{2}-\d{2}")
_TAG = Pattern(r"#([\w.-]+)")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_SECTION_TYPES = {name.lower(): kind for kind, name in SECTIONS.items()} | {kind: kind for kind in SECTIONS}


def decode(data: bytes) -> str:
    """A memory file's text; bytes that are not UTF-8 are kept as lone surrogates (see `encode`)."""
    return data.decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    """The bytes of a text from `decode` (its undecodable bytes as they were)."""
    return text.encode("utf-8", "surrogateescape")


class Block:
    """A run of source lines. `raw` is exact source text; headings carry level and entry type.
    A plain class, changed in place (`entry`): a session start parses MEMORY.md into these
    without importing `dataclasses`."""

    __slots__ = ("raw", "entry", "level", "section_type")

    def __init__(self, raw: str, entry: Entry | None = None, level: int = 0, section_type: str | None = None) -> None:
        self.raw, self.entry, self.level, self.section_type = raw, entry, level, section_type


def section_type(heading: str) -> str | None:
    return _SECTION_TYPES.get(heading.strip().lower())


def _indented(line: str) -> bool:
    return line.startswith(("  ", "\t")) and bool(line.strip())


def _entry_end(lines: list[str], start: int) -> int:
    """Index after the last line of the bullet at `start` (indented lines, blank gaps inside)."""
    j = start + 1
    while j < len(lines):
        if _indented(lines[j]):
            j += 1
            continue
        k = j
        while k < len(lines) and not lines[k].strip():
            k += 1
        if k > j and k < len(lines) and _indented(lines[k]):
            j = k
            continue
        break
    return j


def _parse_entry(raw: str, entry_type: str, section: str, scope: str, file: str) -> Entry | None:
    lines = raw.splitlines()
    lines[0] = _BULLET.sub("", lines[0], count=1).lstrip(" \t")
    lines[1:] = [line[2:] if line.startswith("  ") else line[1:] if line.startswith("\t") else line for line in lines[1:]]
    text = "\n".join(line.rstrip() for line in lines)
    metas = list(_META.finditer(text))
    entry_id, created, pinned, tags = None, None, False, ()
    if metas:
        meta = metas[-1]
        entry_id, fields = meta.group(1), meta.group(2)
        text = text[: meta.start()] + text[meta.end() :]
        date = _DATE.search(fields)
        created = date.group(0) if date else None
        pinned = "pinned" in fields.split()
        tags = tuple(_TAG.findall(fields)) if "#" in fields else ()
    text = "\n".join(line.rstrip() for line in text.strip().split("\n"))
    if not text.isascii():  # a lone surrogate is not ASCII
        text = _SURROGATE.sub("\ufffd", text)
    if not text:
        return None
    return Entry(
        id=entry_id or content_id(entry_type, text),
        type=entry_type,
        text=text,
        created=created,
        pinned=pinned,
        tags=tags,
        scope=scope,
        file=file,
        section=section,
    )


def unique_id(wanted: str, text: str, taken: set[str]) -> str:
    """`wanted` when no entry has it, else an id derived from it and `text` that none has."""
    entry_id, n = wanted, 0
    while entry_id in taken:
        entry_id = "m-" + xxhash.xxh64_hexdigest(f"{wanted}\0{text}\0{n}".encode("utf-8", "surrogatepass"))[:8]
        n += 1
    return entry_id


def _give_id(block: Block, entry: Entry, entry_id: str) -> None:
    """Give the block's `entry` `entry_id`, in its source line too (its date, pin and tags stay)."""
    metas = list(_META.finditer(block.raw))
    if metas and metas[-1].group(1) == entry.id:
        at = metas[-1]
        block.raw = block.raw[: at.start(1)] + entry_id + block.raw[at.end(1) :]
    else:  # a hand-written entry: its id becomes explicit
        body = block.raw.rstrip()
        block.raw = f"{body} <!-- {entry_id} -->{block.raw[len(body):]}"
    block.entry = entry.replace(id=entry_id)


def format_entry(entry: Entry) -> str:
    """The entry as MEMORY.md lines; `entry.text` must be normalized (see normalize_text)."""
    first, *rest = entry.text.split("\n")
    body = "- " + first + "".join("\n" + ("  " + line if line else "") for line in rest)
    meta = [entry.id, *([entry.created] if entry.created else []), *(["pinned"] if entry.pinned else [])]
    meta += ["#" + tag for tag in entry.tags]
    return f"{body} <!-- {' '.join(meta)} -->\n"


def normalize_text(text: str) -> str:
    """Entry text as stored: no trailing spaces, no surrounding blank lines, `\\n` line ends, and
    lone surrogates (unencodable in the UTF-8 file) replaced by U+FFFD."""
    text = _SURROGATE.sub("\ufffd", text)
    return "\n".join(line.rstrip() for line in text.splitlines()).strip()


class MemoryDocument:
    """A parsed memory file. Entries outside typed sections get `default_type` (None: not entries)."""

    def __init__(self, blocks: list[Block], scope: str, file: str, open_fence: str = ""):
        self.blocks, self.scope, self.file = blocks, scope, file
        self.open_fence = open_fence  # the file ends inside a code fence opened by this marker

    def text(self) -> str:
        return "".join(block.raw for block in self.blocks)

    def entries(self) -> list[Entry]:
        return [block.entry for block in self.blocks if block.entry is not None]

    def ids(self) -> set[str]:
        return {block.entry.id for block in self.blocks if block.entry is not None}

    def remove(self, entry_id: str) -> Entry | None:
        """Take out the entry `entry_id`; returns it, None if absent."""
        return self.apply({entry_id: None}).get(entry_id)

    def replace_entry(self, entry_id: str, new: Entry) -> Entry | None:
        """Put `new` where the entry `entry_id` is (same section); returns `new` as stored, None if absent."""
        return self.apply({entry_id: new}).get(entry_id)

    def apply(self, changes: dict[str, Entry | None]) -> dict[str, Entry]:
        """In one pass, put each `changes[id]` where the entry `id` is (same section) or, for None,
        take that entry out. Returns id -> the entry as stored (for None: the entry taken out)."""
        taken, done, blocks = self.ids(), {}, []
        for block in self.blocks:
            if block.entry is None or block.entry.id not in changes:
                blocks.append(block)
                continue
            new = changes[block.entry.id]
            if new is None:
                done[block.entry.id] = block.entry
                continue
            taken.discard(block.entry.id)
            stored = new.replace(id=unique_id(new.id, new.text, taken), scope=self.scope, file=self.file,
                             section=block.entry.section)
            taken.add(stored.id)
            done[block.entry.id] = stored
            blocks.append(Block(format_entry(stored), entry=stored))
        self.blocks = blocks
        return done

    def add(self, entry: Entry) -> Entry:
        """Append `entry` to its type's section (created at the end if missing); returns it as stored."""
        return self.add_all([entry])[0]

    def add_all(self, entries: list[Entry]) -> list[Entry]:
        """`add` each entry, in order (one pass per type); returns them as stored."""
        taken, stored = self.ids(), {}
        for kind in dict.fromkeys(e.type for e in entries):
            group = []
            for n, entry in enumerate(entries):
                if entry.type == kind:
                    entry = entry.replace(id=unique_id(entry.id, entry.text, taken), scope=self.scope, file=self.file,
                                    section=SECTIONS[kind])
                    taken.add(entry.id)
                    group.append((n, entry))
            for (n, _), done in zip(group, self._add_group(kind, [e for _, e in group])):
                stored[n] = done
        return [stored[n] for n in range(len(entries))]

    def _add_group(self, kind: str, entries: list[Entry]) -> list[Entry]:
        if self.blocks and not self.blocks[-1].raw.endswith("\n"):
            self.blocks[-1].raw += "\n"
        heading = next((i for i, b in enumerate(self.blocks) if b.level == 2 and b.section_type == kind), None)
        if heading is None:
            return self._add_section(kind, entries)
        title = _HEADING.match(self.blocks[heading].raw)
        assert title is not None, "a block with a level is a heading line"
        name = title.group(2)
        entries = [entry.replace(section=name) for entry in entries]
        end = next((i for i in range(heading + 1, len(self.blocks)) if 0 < self.blocks[i].level <= 2), len(self.blocks))
        # After the section's last non-blank block: an entry placed above other text would take an
        # indented line below it as its own continuation. A section that runs into a code fence left
        # open at the end of the file gets the fence closed first, or the entry would be code.
        at = end
        new = [Block(format_entry(entry), entry=entry) for entry in entries]
        if at == len(self.blocks) and self.open_fence:
            new[:0] = [Block(self.open_fence + "\n"), Block("\n")]
            self.open_fence = ""
        else:
            while at > heading + 1 and not self.blocks[at - 1].raw.strip():
                at -= 1
            if at == heading + 1 or self.blocks[at - 1].entry is None:
                new.insert(0, Block("\n"))
        if at < len(self.blocks) and self.blocks[at].raw.strip():
            new.append(Block("\n"))
        self.blocks[at:at] = new
        return entries

    def _add_section(self, kind: str, entries: list[Entry]) -> list[Entry]:
        if not self.blocks:
            self.blocks.append(Block("# Memory\n", level=1))
        if self.open_fence:  # close it, or the new section would be code
            self.blocks.append(Block(self.open_fence + "\n"))
            self.open_fence = ""
        if self.blocks[-1].raw.strip():
            self.blocks.append(Block("\n"))
        self.blocks += [Block(f"## {SECTIONS[kind]}\n", level=2, section_type=kind), Block("\n")]
        self.blocks += [Block(format_entry(entry), entry=entry) for entry in entries]
        return entries


def parse(text: str, scope: str = "project", file: str = "", default_type: str | None = None) -> MemoryDocument:
    lines = text.splitlines(keepends=True)
    blocks: list[Block] = []
    current_type, current_name = default_type, ""
    fence = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = _FENCE.match(line.lstrip())
        if marker:
            fence = "" if fence else marker.group(1)
        in_fence = bool(fence)
        heading = None if in_fence else _HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            if level <= 2:
                current_type = section_type(heading.group(2)) if level == 2 else default_type
                current_name = heading.group(2) if level == 2 else ""
            blocks.append(Block(line, level=level, section_type=current_type if level == 2 else None))
            i += 1
            continue
        if current_type and not in_fence and _BULLET.match(line):
            end = _entry_end(lines, i)
            raw = "".join(lines[i:end])
            entry = _parse_entry(raw, current_type, current_name or SECTIONS[current_type], scope, file)
            blocks.append(Block(raw, entry=entry))
            i = end
            continue
        blocks.append(Block(line))
        i += 1
    _unique_ids(blocks)
    return MemoryDocument(blocks, scope, file, fence)


def _unique_ids(blocks: list[Block]) -> None:
    """Each entry whose id an earlier entry has gets a new one (see the module docstring)."""
    taken = {b.entry.id for b in blocks if b.entry is not None}
    if len(taken) == sum(b.entry is not None for b in blocks):
        return
    seen: set[str] = set()
    for block in blocks:
        if block.entry is None:
            continue
        if block.entry.id in seen:
            entry_id = unique_id(block.entry.id, block.entry.text, taken)
            taken.add(entry_id)
            _give_id(block, block.entry, entry_id)
        seen.add(block.entry.id)
