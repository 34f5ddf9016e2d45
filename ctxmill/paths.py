"""Where ctxmill keeps its files. Faces resolve paths here and pass them to the engines.

Project home: $CTXMILL_HOME if set, else `.ctxmill/` in the nearest ancestor of the working
directory that already has one or is a git root, else `.ctxmill/` in the working directory.
Global home: $XDG_DATA_HOME/ctxmill (default ~/.local/share/ctxmill).
CCR store: one per user, `<global home>/ccr`, written and read by every face (proxy, hooks, CLI,
MCP server) from any project, so a marker expands wherever it is shown. A project's own
`<project home>/ccr` (where faces stored originals before) is still read, after it.

Links: the homes the user names ($CTXMILL_HOME, $XDG_DATA_HOME, ~) are resolved here, so the
user's own symbolic links are followed once, at the edge. A project's `.ctxmill` is not: it may
come from a cloned repository, and `ground.files` refuses to write through a link in it.
"""

from __future__ import annotations

import os
from pathlib import Path


def project_root(start: Path | None = None) -> Path:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".ctxmill").is_dir() or (folder / ".git").exists():
            return folder
    return here


def project_home(start: Path | None = None) -> Path:
    env = os.environ.get("CTXMILL_HOME")
    if env:
        return Path(env).expanduser().resolve()
    return project_root(start) / ".ctxmill"


def global_home() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return (Path(base).expanduser() / "ctxmill").resolve()


def user_ccr_dir(global_home_dir: Path | None = None) -> Path:
    """The CCR store every face on the machine writes to and reads first."""
    return (global_home_dir or global_home()) / "ccr"


def ccr_dir(home: Path | None = None) -> Path:
    """A project's own CCR store: read after the user's store, for originals stored there before."""
    return (home or project_home()) / "ccr"


def sessions_dir(home: Path | None = None) -> Path:
    return (home or project_home()) / "sessions"


def ledger_file(global_home_dir: Path | None = None) -> Path:
    """The savings ledger every face writes (SQLite, `ctxmill.ledger.store`)."""
    return (global_home_dir or global_home()) / "ledger.sqlite3"


GITIGNORE = """\
# Written by ctxmill: commit the project's memory and settings, ignore the rest
# (CCR originals, sessions, logs, indexes, checkpoints, caches).
*
!.gitignore
!MEMORY.md
!notes.md
!config.toml
"""


def ensure_gitignore(home: Path) -> Path | None:
    """Write `<home>/.gitignore` (GITIGNORE) unless the project home already has one; the path when
    written. A home that does not exist yet is created (private)."""
    from ground.files import atomic_write, private_dir

    path = private_dir(home) / ".gitignore"
    if path.exists():
        return None
    atomic_write(path, GITIGNORE.encode("utf-8"))
    return path
