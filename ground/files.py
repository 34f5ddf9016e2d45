"""Private files, lock files and atomic writes for everything persisted under `.ctxmill/`, and
bounded reads of files someone else names.

What must hold: folders the project creates are 0700 (every missing component, not only the
leaf as `Path.mkdir(parents=True)` would do), files and lock files 0600, and a reader sees a file's old or new
content, never a partial write. Folders that already exist keep their mode. `read_regular`
never blocks on a pipe and never reads more than it was allowed (a device like /dev/zero is
endless).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create `path` and its missing parents as 0700 folders; return it."""
    path = Path(path)
    missing = []
    for folder in (path, *path.parents):
        if folder.is_dir():
            break
        missing.append(folder)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=DIR_MODE)
            os.chmod(folder, DIR_MODE)  # mkdir's mode is masked by the umask
    return path


def private_file(path: Path) -> Path:
    """Create `path` (0600) if it does not exist yet; an existing file is left as it is."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE))
    return path


def private_lock(path: Path, timeout: float = -1):
    """A `filelock.FileLock` on `path` whose lock file is 0600 in a private folder (imported on
    first use: processes that take no lock never pay for it)."""
    from filelock import FileLock

    path = Path(path)
    private_dir(path.parent)
    return FileLock(str(path), mode=FILE_MODE, timeout=timeout)


def atomic_write(path: Path, data: bytes, fsync: bool = True) -> None:
    """Write `data` to a 0600 temp file beside `path`, then rename it over `path`."""
    path = Path(path)
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name, suffix=".tmp")  # mkstemp: 0600
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            if fsync:
                out.flush()
                os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def read_regular(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of the regular file at `path`. OSError (its `filename` set, its `strerror` one
    line) when `path` is not a regular file (a pipe, a device, a folder: opened without blocking
    and never read) or holds more than `max_bytes`."""
    with open_regular(path) as source:
        return read_at_most(source, max_bytes, str(path))


def open_regular(path: str | Path) -> BinaryIO:
    """The regular file at `path` opened for reading (binary), or OSError as `read_regular` says."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(mode) else "a pipe, socket or device"
        raise OSError(errno.EINVAL, f"not a regular file ({kind})", str(path))
    return os.fdopen(fd, "rb")


def read_at_most(source: BinaryIO, max_bytes: int, name: str) -> bytes:
    """All of `source`, or OSError (EFBIG) as soon as it holds more than `max_bytes`."""
    data = source.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"larger than {max_bytes:,} bytes", name)
    return data
