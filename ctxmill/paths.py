"""Where ctxmill keeps its files. Faces resolve paths here and pass them to the engines.

Project home: $CTXMILL_HOME if set, else `.ctxmill/` in the nearest ancestor of the working
directory that already has one or is a git root, else `.ctxmill/` in the working directory.
Global home: $XDG_DATA_HOME/ctxmill (default ~/.local/share/ctxmill).
CCR store: one per user, `<global home>/ccr`, written and read by every face (proxy, hooks, CLI,
MCP server) from any project, so a marker expands wherever it is shown. A project's own
`<project home>/ccr` (where faces stored originals before) is still read, after it.

Ownership (the one place that enforces it): no home is taken from a folder that is neither the
user's nor root's. The walk up from the working directory stops at the user's home (which it
still looks at) and before any folder, `.ctxmill` or `.git` owned by someone else (another
user's `.ctxmill` in a shared folder such as /tmp is nobody's project home); a project home
whose folder or `.ctxmill` belongs to someone else, or whose `.ctxmill` is a symbolic link, is
refused (`ForeignHome`, a PermissionError naming it), as is a $CTXMILL_HOME or global home that
exists and belongs to someone else. So the config, memory, checkpoints and sessions read from a
home are always the user's own, or come from a repository the user cloned (whose files are read
bounded: `ground.home_files`; whose config may set only what `ctxmill.provenance` allows).

Links: the homes the user names ($CTXMILL_HOME, $XDG_DATA_HOME, ~) are resolved here, so the
user's own symbolic links are followed once, at the edge. A project's `.ctxmill` is not: it may
come from a cloned repository, so it must not be a link, and `ground.files` refuses to write
through a link in it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


class ForeignHome(PermissionError):
    """A home ctxmill refuses: in or of a folder someone else owns, or a project's `.ctxmill` that
    is a symbolic link. Its message says what to do instead."""


def trusted(path: Path) -> bool:
    """Whether `path` belongs to this user or to root, both as an entry and once a link is
    followed (False when it cannot be looked at)."""
    if not hasattr(os, "getuid"):  # pragma: no cover - Windows: no owners to compare
        return True
    mine = {os.getuid(), 0}
    try:
        return os.lstat(path).st_uid in mine and os.stat(path).st_uid in mine
    except OSError:
        return False


def _user_home() -> Path | None:
    try:
        return Path.home().resolve()
    except (RuntimeError, KeyError, OSError):  # no $HOME and no password entry
        return None


def project_root(start: Path | None = None) -> Path:
    """The nearest folder from `start` (default: the working directory) up that has a
    `.ctxmill` or is a git root, within the ownership rule of the module docstring; else
    `start` itself."""
    here = (start or Path.cwd()).resolve()
    home = _user_home()
    for folder in (here, *here.parents):
        if os.path.lexists(folder) and not trusted(folder):
            break
        ctxmill, git = folder / ".ctxmill", folder / ".git"
        if any(os.path.lexists(m) and not trusted(m) for m in (ctxmill, git)):
            break
        if ctxmill.is_dir() or ctxmill.is_symlink() or git.exists():  # a link: refused below
            return folder
        if folder == home:
            break
    return here


def project_home(start: Path | None = None) -> Path:
    """$CTXMILL_HOME, else `<project_root(start)>/.ctxmill`; ForeignHome as the module says."""
    env = os.environ.get("CTXMILL_HOME")
    if env:
        return _own(Path(env).expanduser().resolve(), "CTXMILL_HOME")
    root = project_root(start)
    home = root / ".ctxmill"
    if os.path.lexists(root) and not trusted(root):
        raise _foreign(root, "a project folder")
    if os.path.islink(home):
        raise ForeignHome(errno.ELOOP, "refused: the project home is a symbolic link (a cloned "
                          "repository may point it anywhere); set CTXMILL_HOME to the folder "
                          "instead", str(home))
    return _own(home, "the project home")


def global_home() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return _own((Path(base).expanduser() / "ctxmill").resolve(), "the global home")


def _own(home: Path, what: str) -> Path:
    """`home` when it does not exist yet or is trusted; else ForeignHome."""
    if os.path.lexists(home) and not trusted(home):
        raise _foreign(home, what)
    return home


def _foreign(path: Path, what: str) -> ForeignHome:
    try:
        owner = f"uid {os.lstat(path).st_uid}"
    except OSError:
        owner = "someone else"
    return ForeignHome(errno.EPERM, f"refused: {what} belongs to {owner}, not to this user: "
                       "ctxmill takes no config, memory or checkpoint from another user's folder "
                       "(set CTXMILL_HOME to a folder of yours)", str(path))


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
