"""Pruning the embedded store's session folders (`<home>/sessions/<name>/`): old and surplus ones go."""

from __future__ import annotations

import os
from pathlib import Path

from compress.state.session_store import LOCK_FILE
from ground.files import private_lock

SESSION_MAX_AGE_DAYS = 30
"""Session folders untouched this long are deleted by `prune_sessions`."""
SESSION_MAX_COUNT = 200
"""… and beyond this many, the least recently used go first."""


def prune_sessions(root: Path, max_age_days: float = SESSION_MAX_AGE_DAYS, max_sessions: int = SESSION_MAX_COUNT,
                   now: float | None = None, keep: tuple[str, ...] = ()) -> list[Path]:
    """Delete the session folders under `root` (state, stats) last written more than
    `max_age_days` ago, then the least recently written beyond `max_sessions`. A folder
    whose state lock another process holds is skipped, and one holding a file named in `keep`
    (a checkpoint) is never deleted nor counted: anonymous requests that create many folders
    cannot push a person's records out. Returns the folders deleted."""
    import shutil
    import time

    from filelock import Timeout

    now = time.time() if now is None else now
    try:
        folders = [p for p in Path(root).iterdir()
                   if p.is_dir() and not p.is_symlink() and not any(os.path.lexists(p / name) for name in keep)]
    except OSError:
        return []
    touched = sorted(((_last_write(p), p) for p in folders), key=lambda t: (-t[0], t[1].name))
    doomed = [p for i, (when, p) in enumerate(touched) if i >= max_sessions or now - when > max_age_days * 86400]
    removed = []
    for folder in doomed:
        try:
            with private_lock(folder / LOCK_FILE, timeout=0):
                shutil.rmtree(folder)
            removed.append(folder)
        except (Timeout, OSError):
            continue
    return removed


def _last_write(folder: Path) -> float:
    """The newest modification time of the folder and the files in it (0 when unreadable)."""
    try:
        return max([folder.stat().st_mtime, *(p.stat().st_mtime for p in folder.iterdir())])
    except OSError:
        return 0.0
