"""What a tool call does to one file (`FileTouch`), how paths compare, and apply_patch bodies.

Actions (`FileTouch.action`):
  read    the content was read
  write   the whole content was replaced (Write, `>` redirections, heredocs, `cp`/`tee` targets)
  edit    part of the content changed (Edit, MultiEdit, `sed -i`, `>>`, `*** Update File:`)
  delete  the file was removed (`rm`, `*** Delete File:`)
  move    the file left this path (`mv` source, the file of a `*** Move to:` patch)
  create  a file appeared at this path (`touch`, `*** Add File:`, `mv` / `*** Move to:` target)

Paths are normalised lexically (`posixpath.normpath`: `./`, `//` and `..` folded, quotes
removed); a relative path is joined to the call's working directory when one is known, and
otherwise stays relative. A Windows path with a drive (`C:\\repo\\src\\a.ts`), or any path
under such a working directory, takes forward slashes (`C:/repo/src/a.ts`) and counts as
absolute (drive letter upper-cased), so Codex's patches on Windows name the files its
PowerShell reads read.
`same_file(a, b)` decides whether two normalised paths name the same file: equal, or one is
relative with a directory part (`src/app.py`) and the other is absolute and ends with `/` + it.
Bare file names never match absolute paths: that is not obviously the same file. Everything
here is pure and linear in the input.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

READ, WRITE, EDIT, DELETE, MOVE, CREATE = "read", "write", "edit", "delete", "move", "create"
CHANGES = frozenset({WRITE, EDIT, DELETE, MOVE, CREATE})
"""Actions that change what is on disk."""


@dataclass(frozen=True, slots=True)
class FileTouch:
    """One file a call touches: its normalised path and one of the actions above."""

    path: str
    action: str


_DRIVE = re.compile(r"[A-Za-z]:[\\/]")


def is_absolute(path: str) -> bool:
    """A POSIX absolute path, or a Windows one with a drive (`C:\\x`, `C:/x`)."""
    return path.startswith("/") or _DRIVE.match(path) is not None


def normalize_path(path: str, cwd: str | None = None) -> str:
    """A lexically normalised path ('' for nothing usable); relative paths join `cwd` if given."""
    path = path.strip().strip("'\"")
    if not path or "\n" in path or "\x00" in path:
        return ""
    if _DRIVE.match(path) or (cwd and _DRIVE.match(cwd)):
        path, cwd = path.replace("\\", "/"), cwd and cwd.replace("\\", "/")
    if cwd and not (is_absolute(path) or path.startswith("~")):
        path = posixpath.join(cwd, path)
    if _DRIVE.match(path):
        path = path[0].upper() + path[1:]  # Windows drive letters name one drive in either case
    path = posixpath.normpath(path)
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    return "" if path == "." else path


def same_file(a: str, b: str) -> bool:
    """Two normalised paths name the same file (see the module docstring for the rule)."""
    if a == b:
        return True
    absolute, relative = (a, b) if is_absolute(a) else (b, a)
    if not is_absolute(absolute) or is_absolute(relative) or relative.startswith(("~", "..")) or "/" not in relative:
        return False
    return absolute.endswith("/" + relative)


_PATCH_HEADERS = (("*** Add File:", CREATE), ("*** Update File:", EDIT), ("*** Delete File:", DELETE))


def patch_touches(patch: str, cwd: str | None) -> list[FileTouch]:
    """The files an apply_patch body touches (`*** Add File:`, `*** Update File:`,
    `*** Delete File:`, `*** Move to:`), in order."""
    touches: list[FileTouch] = []
    for line in patch.splitlines():
        if not line.startswith("*** "):
            continue
        if line.startswith("*** Move to:"):
            target = normalize_path(line[len("*** Move to:"):], cwd)
            if touches and target:
                touches[-1] = FileTouch(touches[-1].path, MOVE)
                touches.append(FileTouch(target, CREATE))
            continue
        for header, action in _PATCH_HEADERS:
            if line.startswith(header):
                path = normalize_path(line[len(header):], cwd)
                if path:
                    touches.append(FileTouch(path, action))
    return touches


def patch_old_lines(patch: str) -> list[str]:
    """The lines an apply_patch body says the file holds now: the context (` `) and removed
    (`-`) lines of its `*** Update File:` sections, and `@@` anchors; the model copies them
    out of what it has seen of the file, as an edit's `old_string`."""
    lines: list[str] = []
    updating = False
    for line in patch.splitlines():
        if line.startswith("*** "):
            updating = line.startswith("*** Update File:") or (updating and line.startswith("*** Move to:"))
        elif updating and line.startswith("@@"):
            lines.append(line[2:].strip())
        elif updating and line[:1] in (" ", "-"):
            lines.append(line[1:])
    return [line for line in lines if line]


def patch_new_lines(patch: str) -> list[str]:
    """The lines an apply_patch body leaves in its files: the added (`+`) and context (` `)
    lines of its `*** Add File:` and `*** Update File:` sections."""
    lines: list[str] = []
    writing = False
    for line in patch.splitlines():
        if line.startswith("*** "):
            writing = line.startswith(("*** Add File:", "*** Update File:")) or (writing and line.startswith("*** Move to:"))
        elif writing and line[:1] in ("+", " "):
            lines.append(line[1:])
    return [line for line in lines if line]


def is_patch(text: str) -> bool:
    return "*** Begin Patch" in text or any(h in text for h, _ in _PATCH_HEADERS)
