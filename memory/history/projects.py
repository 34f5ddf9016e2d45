"""One project per repository, whatever worktree a session ran in; a session's own last time.

`repository_of(folder)`: a folder inside a git worktree (`.git` is a file `gitdir: <main>/.git/
worktrees/<name>`) is its main repository's folder, so the sessions of `app-feature` and `app`
are one project in history, search and distill; any other folder (a main work tree, a folder
that no longer exists, a recording from another machine) is itself. Reads at most one small
`.git` file per folder up the tree; never raises.
`last_recorded(pieces, tail)`: when a session's last message was recorded (its last model call
in any of the transcript pieces given, else the last `"timestamp"` of the file's tail), None when
the recording has no time.
"""

from __future__ import annotations

import os
import re
from datetime import datetime

_GITDIR = re.compile(rb"^gitdir:\s*(.+?)\s*$", re.M)
_STAMP = re.compile(rb'"timestamp"\s*:\s*"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(?:Z|[+-][0-9:]+)?)"')


def repository_of(folder: str) -> str:
    if not folder or not os.path.isabs(folder):
        return folder
    here = folder.rstrip("/") or "/"
    for _ in range(64):
        marker = os.path.join(here, ".git")
        try:
            if os.path.isdir(marker):
                return folder
            if os.path.isfile(marker):
                with open(marker, "rb") as f:
                    found = _GITDIR.search(f.read(4096))
                gitdir = found.group(1).decode("utf-8", "replace") if found else ""
                if "/worktrees/" in gitdir.replace("\\", "/"):
                    main_git = gitdir.replace("\\", "/").rsplit("/worktrees/", 1)[0]
                    main = os.path.dirname(os.path.normpath(os.path.join(here, main_git)))
                    rest = os.path.relpath(folder, here)
                    return main if rest == "." else os.path.join(main, rest)
                return folder
        except OSError:
            return folder
        parent = os.path.dirname(here)
        if parent == here:
            return folder
        here = parent
    return folder


def last_recorded(pieces, tail: bytes) -> float | None:
    times = [c.at for piece in pieces for c in piece.calls if c.at is not None]
    if times:
        return max(times)
    for raw in reversed(_STAMP.findall(tail)):
        try:
            return datetime.fromisoformat(raw.decode().replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
    return None
