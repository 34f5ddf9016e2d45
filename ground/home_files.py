"""Reading the files of a ctxmill home, bounded: every kind of file's size cap, in one place.

A home's files may come from someone else: a project home (`<project>/.ctxmill`) from a
repository the user cloned, links and devices included. So every file ctxmill reads from a home
(config.toml, MEMORY.md and notes.md, checkpoint.md, the session record, the consolidation
schedule, the usage log, the search index, a live OpenCode session's first prompt) is read with
`read_home_file` or `open_home_file`, which hold that it is:

- a regular file: a pipe, a socket, a device such as /dev/zero or a folder is refused unread;
- no larger than its kind's cap (`CONFIG_BYTES` ... below);
- inside the home once every link is resolved (`ground.files.open_inside`): a link that leaves
  the home (`MEMORY.md -> ~/.ssh/id_rsa`, `.index -> /elsewhere`) is refused, one that stays
  inside is followed. The home itself is never a link someone else planted: `ctxmill.paths`
  takes no project home from a `.ctxmill` that is a link or that belongs to another user.

A missing file is None; a refused one an OSError naming it (EINVAL: not a regular file, EFBIG:
over its cap, EXDEV: a link out of the home). Readers that only feed the prompt (injection,
search) skip a refused file with a warning; writers raise it.

The repository map reads the project's source files with caps of its own (repomap/).
"""

from __future__ import annotations

from pathlib import Path

TYPE_CHECKING = (
    False  # as typing.TYPE_CHECKING, without importing typing (a memory search reads through here)
)
if TYPE_CHECKING:
    from typing import BinaryIO

CONFIG_BYTES = 1 * 2**20
"""config.toml (the project's and the user's)."""
MEMORY_BYTES = 16 * 2**20
"""MEMORY.md and notes.md, project or global (10,000 entries take about 2 MB)."""
CHECKPOINT_BYTES = 4 * 2**20
"""checkpoint.md (a checkpoint is a few kilobytes)."""
RECORD_BYTES = 1 * 2**20
"""Small JSON records: sessions/current.json, the consolidation schedule."""
PROMPT_BYTES = 8 * 2**20
"""A live OpenCode session's first prompt (sessions/<id>/prompt.txt)."""
USAGE_BYTES = 16 * 2**20
"""The usage log (.index/usage.log): read only this far (it is compacted long before)."""
INDEX_BYTES = 1 * 2**30
"""The search index (.index/index.bin), read piece by piece: a larger file is rebuilt."""


def read_home_file(home: Path, name: str | Path, max_bytes: int) -> bytes | None:
    """The bytes of `home / name` (None when it does not exist); OSError when refused (see the
    module docstring)."""
    from ground.files import read_inside

    try:
        return read_inside(Path(home) / name, home, max_bytes)
    except FileNotFoundError:
        return None


def open_home_file(home: Path, name: str | Path) -> BinaryIO | None:
    """`home / name` opened for reading, checked as `read_home_file` checks it but for the size
    (the caller reads at most its kind's cap); None when it does not exist."""
    from ground.files import open_inside

    try:
        return open_inside(Path(home) / name, home)
    except FileNotFoundError:
        return None


def read_home_file_or_skip(home: Path, name: str | Path, max_bytes: int) -> bytes | None:
    """As `read_home_file`, but a refused file is None too, with one warning in the log: what a
    reader that only feeds the prompt or a search takes (a cloned repository's
    `MEMORY.md -> /dev/zero` must not stop the rest of a hook's answer)."""
    try:
        return read_home_file(home, name, max_bytes)
    except OSError as exc:
        from ground.lazy_log import warning

        warning("ctxmill.files", "%s: %s; left unread", Path(home) / name, exc.strerror or exc)
        return None
