"""Dream's archive: nothing a dream run removes is lost.

Each run that changes memory writes `dream-archive/<UTC stamp>/` in the project home (never
overwritten): `MEMORY.md` and `notes.md` as they were before the run, and `removed.md`, a
memory file a person can read that lists why each entry went ("merged into m-…", "superseded
by m-…") and holds every removed entry with its id, date, pin and tags.

`restore(cfg, what)`: `what` is an entry id (put back into MEMORY.md from the newest run that
removed it, unless memory holds that id) or a run stamp (MEMORY.md and notes.md put back as
they were before that run; the current files are archived first, so a restore can be undone).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ground.files import atomic_write, private_dir, private_lock
from memory import api
from memory.config import MemoryConfig
from memory.entry import SECTIONS, Entry
from memory.markdown import decode, encode, format_entry, parse
from memory.reading import read_file

ARCHIVE_DIR = "dream-archive"
REMOVED_FILE = "removed.md"


class NothingToRestore(LookupError):
    """No archived run or entry matches."""


def runs(cfg: MemoryConfig) -> list[Path]:
    """The archived runs, oldest first."""
    folder = cfg.project_home / ARCHIVE_DIR
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def write_run(cfg: MemoryConfig, removed: list[tuple[Entry, str]], title: str, now: datetime | None = None) -> Path:
    """Archive MEMORY.md and notes.md as they are now and the `removed` (entry, why) pairs.
    The caller holds the memory files' locks."""
    home = cfg.project_home
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    folder, n = home / ARCHIVE_DIR / stamp, 1
    while folder.exists():
        n += 1
        folder = home / ARCHIVE_DIR / f"{stamp}-{n}"
    private_dir(folder)
    for name in (api.MEMORY_FILE, api.NOTES_FILE):
        if (home / name).exists():
            atomic_write(folder / name, read_file(home / name))
    lines = [f"# {title}: {folder.name}", "",
             f"Put an entry back with `ctxmill dream --restore ID`, both files as they were before this run "
             f"with `ctxmill dream --restore {folder.name}`.", ""]
    lines += [f"- {entry.id}: {why}" for entry, why in removed] or ["(nothing removed)"]
    for kind, heading in SECTIONS.items():
        of_kind = [entry for entry, _ in removed if entry.type == kind]
        if of_kind:
            lines += ["", f"## {heading}", "", *(format_entry(e).rstrip("\n") for e in of_kind)]
    atomic_write(folder / REMOVED_FILE, ("\n".join(lines) + "\n").encode("utf-8"))
    return folder


def restore(cfg: MemoryConfig, what: str) -> str:
    """Restore an archived entry or run (see the module docstring); returns what was done."""
    archived = runs(cfg)
    if any(run.name == what for run in archived):
        return _restore_run(cfg, next(run for run in archived if run.name == what))
    for run in reversed(archived):
        path = run / REMOVED_FILE
        if not path.exists():
            continue
        entries = parse(decode(_archived(cfg, path))).entries()
        entry = next((e for e in entries if e.id == what), None)
        if entry is not None:
            return _restore_entry(cfg, entry, run)
    raise NothingToRestore(f"no archived dream run or removed entry named {what!r} "
                           f"(runs: {', '.join(r.name for r in archived) or 'none'})")


def _restore_entry(cfg: MemoryConfig, entry: Entry, run: Path) -> str:
    if any(e.id == entry.id for e in api.list_entries(cfg, "project")):
        return f"{entry.id} is in memory already"
    path = cfg.project_home / api.MEMORY_FILE
    with api.lock(path):
        doc = parse(decode(read_file(path)), "project", str(path))
        doc.add(entry)
        atomic_write(path, encode(doc.text()))
    return f"restored {entry.id} from {run.name} to MEMORY.md"


def _restore_run(cfg: MemoryConfig, run: Path) -> str:
    home = cfg.project_home
    memory_path, notes_path = home / api.MEMORY_FILE, home / api.NOTES_FILE
    with private_lock(home / ".dream.lock"), api.lock(memory_path), api.lock(notes_path):
        saved = write_run(cfg, [], "Before restoring " + run.name)
        for path in (memory_path, notes_path):
            if (run / path.name).exists():
                atomic_write(path, _archived(cfg, run / path.name))
            else:
                path.unlink(missing_ok=True)  # absent before that run; its copy is in `saved`
    return f"restored MEMORY.md and notes.md as they were before {run.name}; the files replaced are in {saved.name}"


def _archived(cfg: MemoryConfig, path: Path) -> bytes:
    """A file of an archived run, read bounded inside the project home (`ground.home_files`)."""
    from ground.home_files import MEMORY_BYTES, read_home_file

    return read_home_file(cfg.project_home, path.relative_to(cfg.project_home), MEMORY_BYTES) or b""
