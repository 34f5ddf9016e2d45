"""Team memory in git: the memory files merge entry by entry (`ctxmill merge-memory`).

`register(root, command)` makes the repository at `root` use the driver:
- `.gitattributes` (checked in, names no path of this machine) gets one line per memory file,
  `.ctxmill/MEMORY.md merge=ctxmill-memory` and the same for notes.md, added once;
- the repository's own git config (`.git/config`, this machine's) gets
  `merge.ctxmill-memory.driver = <command> merge-memory %O %A %B %P`.
Idempotent: a second run changes nothing. Returns what it changed, one line each.
`unregister(root)` (`ctxmill uninstall … --project`) takes both away again.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

DRIVER = "ctxmill-memory"
FILES = (".ctxmill/MEMORY.md", ".ctxmill/notes.md")


def attribute_lines() -> list[str]:
    return [f"{name} merge={DRIVER}" for name in FILES]


def register(root: Path, command: list[str]) -> list[str]:
    """Register the driver in the git repository at `root` (ValueError: not a git repository)."""
    if not (root / ".git").exists():
        raise ValueError(f"{root} is not a git repository")
    changes = []
    attributes = root / ".gitattributes"
    text = attributes.read_text(encoding="utf-8") if attributes.exists() else ""
    missing = [line for line in attribute_lines() if line not in text.splitlines()]
    if missing:
        attributes.write_text(text + ("" if not text or text.endswith("\n") else "\n") + "\n".join(missing) + "\n",
                              encoding="utf-8")
        changes.append(f"{attributes}: memory files merge with {DRIVER}")
    driver = " ".join(shlex.quote(part) for part in command) + " merge-memory %O %A %B %P"
    settings = {f"merge.{DRIVER}.name": "ctxmill memory entries", f"merge.{DRIVER}.driver": driver}
    for key, value in settings.items():
        now = subprocess.run(["git", "config", "--local", "--get", key], cwd=root, capture_output=True, text=True)
        if now.stdout.strip() != value:
            subprocess.run(["git", "config", "--local", key, value], cwd=root, check=True, capture_output=True)
            changes.append(f"git config {key}")
    return changes


def unregister(root: Path) -> list[str]:
    """Undo `register`: its lines leave `.gitattributes` (the file goes when nothing else is in
    it) and the driver leaves the repository's git config. Returns what it changed."""
    changes = []
    attributes = root / ".gitattributes"
    if attributes.exists():
        lines = attributes.read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if line not in attribute_lines()]
        if kept != lines:
            if any(line.strip() for line in kept):
                attributes.write_text("\n".join(kept) + "\n", encoding="utf-8")
            else:
                attributes.unlink()
            changes.append(f"{attributes}: memory files merge as other files")
    if (root / ".git").exists():
        removed = subprocess.run(["git", "config", "--local", "--remove-section", f"merge.{DRIVER}"], cwd=root,
                                 capture_output=True)
        if removed.returncode == 0:
            changes.append(f"git config merge.{DRIVER} removed")
    return changes
