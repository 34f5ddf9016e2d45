"""How hosts start ctxmill: the command written into hook, MCP, slash-command and plugin settings.

Must hold: what a team checks in (project scope: `.claude/settings.json`, `.mcp.json`,
`opencode.json`, `.opencode/`) names no path of this machine: it runs `ctxmill`, found on PATH
when the host runs it. User-scope files stay on this machine, so there the command is always the
absolute path of this very installation's `ctxmill` script (or this Python with `-m ctxmill`),
even when PATH leads to it now: PATH may lead there only through a shell with a virtual
environment activated, and a host started from another shell would find no `ctxmill` (every
hook failing with 127).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

BARE = "ctxmill"


def this_installation() -> Path | None:
    """The `ctxmill` script installed beside this Python (None: not installed as a script)."""
    script = Path(sys.executable).with_name(BARE)
    return script if script.is_file() and os.access(script, os.X_OK) else None


def _same(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def resolved_command(scope: str) -> tuple[list[str], str | None]:
    """(the command hosts run, a warning or None) for an install at `scope` ("user" | "project")."""
    mine = this_installation()
    if scope == "user":
        return ([str(mine)] if mine else [sys.executable, "-m", "ctxmill"]), None
    on_path = shutil.which(BARE)
    if on_path and (mine is None or _same(on_path, mine)):
        return [BARE], None
    where = f"PATH finds {on_path}, not this installation ({mine})" if on_path else "`ctxmill` is not on PATH here"
    return [BARE], (f"{where}: project files call `ctxmill` from PATH so that they work on every machine; "
                    "put this installation on PATH (e.g. `pipx install ctxmill`) or install with --user")
