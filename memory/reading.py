"""Reading the memory files (MEMORY.md, notes.md) of a home, bounded: every read of one goes
through here. Light on purpose: a search with an up-to-date index imports nothing heavier.

What must hold: a file is read only when it is a regular file of at most MEMORY_BYTES inside
its home once links are resolved (`ground.home_files`); a missing file reads as b"".
"""

from __future__ import annotations

from pathlib import Path


def read_file(path: Path) -> bytes:
    """The bytes of the memory file at `path` (MEMORY.md or notes.md of a home), b"" when it does
    not exist; OSError when it is refused (a link out of the home, a device, over the cap):
    what a writer reads before replacing the file."""
    from ground.home_files import MEMORY_BYTES, read_home_file

    return read_home_file(path.parent, path.name, MEMORY_BYTES) or b""


def read_file_or_skip(path: Path) -> bytes:
    """As `read_file`, a refused file being empty (with a warning): what injection, listing and
    search read, so a cloned repository's `MEMORY.md -> /dev/zero` stops none of them."""
    from ground.home_files import MEMORY_BYTES, read_home_file_or_skip

    return read_home_file_or_skip(path.parent, path.name, MEMORY_BYTES) or b""
