"""Team memory in git: the memory files merge without conflict markers in every clone.

`register(root, command)` (`ctxmill install … --project` in a git repository):
- `.gitattributes` (checked in, names no path of this machine) gets one line per memory file with
  git's built-in `merge=union`: a fresh clone merges two branches' entries with no setup at all
  (each entry is one line; the lines of both sides are kept, and ctxmill's reader gives a
  repeated id a new one: `memory.markdown`);
- this clone's `.git/info/attributes`, which wins over `.gitattributes`, names the entry-by-entry
  driver instead (`merge=ctxmill-memory`: `memory.merge`, identical entries kept once, forgotten
  ones gone, edits matched by id), and the repository's own git config (`.git/config`) gets
  `merge.ctxmill-memory.driver = <command> merge-memory %O %A %B %P`;
- `.git/info/exclude` gets `*.ctxmill.bak`: install's backups of the files it changes
  (`ctxmill.install.backups`) never show as untracked files.
Idempotent: a second run changes nothing. Returns what it changed, one line each. An older
`.gitattributes` that named the driver is moved to `union`. `unregister(root)` (`ctxmill
uninstall … --project`) takes all of it away again.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

DRIVER = "ctxmill-memory"
FILES = (".ctxmill/MEMORY.md", ".ctxmill/notes.md")
BACKUPS = "*.ctxmill.bak"


def attribute_lines() -> list[str]:
    """What `.gitattributes` carries: a merge every clone has."""
    return [f"{name} merge=union" for name in FILES]


def driver_lines() -> list[str]:
    """What this clone's `.git/info/attributes` carries: the entry-by-entry driver."""
    return [f"{name} merge={DRIVER}" for name in FILES]


def _add_lines(path: Path, lines: list[str], drop: tuple[str, ...] | list[str] = ()) -> bool:
    """`path` with `lines` present (and `drop` gone); True if it changed."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    have = [line for line in text.splitlines() if line not in drop]
    missing = [line for line in lines if line not in have]
    if not missing and len(have) == len(text.splitlines()):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in have + missing), encoding="utf-8")
    return True


def _remove_lines(path: Path, lines: list[str]) -> bool:
    """`path` without `lines` (the file goes when nothing else is in it); True if it changed."""
    if not path.exists():
        return False
    have = path.read_text(encoding="utf-8").splitlines()
    kept = [line for line in have if line not in lines]
    if kept == have:
        return False
    if any(line.strip() for line in kept):
        path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    else:
        path.unlink()
    return True


def register(root: Path, command: list[str]) -> list[str]:
    """Register the merges in the git repository at `root` (ValueError: not a git repository)."""
    git_dir = root / ".git"
    if not git_dir.is_dir():
        raise ValueError(f"{root} is not a git repository")
    changes = []
    if _add_lines(root / ".gitattributes", attribute_lines(), drop=driver_lines()):
        changes.append(f"{root / '.gitattributes'}: memory files merge line by line in any clone (union)")
    if _add_lines(git_dir / "info" / "attributes", driver_lines()):
        changes.append(f"{git_dir / 'info' / 'attributes'}: memory files merge entry by entry here ({DRIVER})")
    if _add_lines(git_dir / "info" / "exclude", [BACKUPS]):
        changes.append(f"{git_dir / 'info' / 'exclude'}: install's backups ({BACKUPS}) are not shown")
    driver = " ".join(shlex.quote(part) for part in command) + " merge-memory %O %A %B %P"
    settings = {f"merge.{DRIVER}.name": "ctxmill memory entries", f"merge.{DRIVER}.driver": driver}
    for key, value in settings.items():
        now = subprocess.run(["git", "config", "--local", "--get", key], cwd=root, capture_output=True, text=True)
        if now.stdout.strip() != value:
            subprocess.run(["git", "config", "--local", key, value], cwd=root, check=True, capture_output=True)
            changes.append(f"git config {key}")
    return changes


def unregister(root: Path) -> list[str]:
    """Undo `register`. Returns what it changed."""
    changes = []
    if _remove_lines(root / ".gitattributes", attribute_lines() + driver_lines()):
        changes.append(f"{root / '.gitattributes'}: memory files merge as other files")
    git_dir = root / ".git"
    if git_dir.is_dir():
        if _remove_lines(git_dir / "info" / "attributes", driver_lines()):
            changes.append(f"{git_dir / 'info' / 'attributes'}: the entry-by-entry merge removed")
        if _remove_lines(git_dir / "info" / "exclude", [BACKUPS]):
            changes.append(f"{git_dir / 'info' / 'exclude'}: {BACKUPS} shown again")
        removed = subprocess.run(["git", "config", "--local", "--remove-section", f"merge.{DRIVER}"], cwd=root,
                                 capture_output=True)
        if removed.returncode == 0:
            changes.append(f"git config merge.{DRIVER} removed")
    return changes
