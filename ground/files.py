"""Private files, lock files and atomic writes for everything persisted under `.ctxmill/`.

What must hold: folders the project creates are 0700 (every missing component, not only the
leaf as `Path.mkdir(parents=True)` would do), files and lock files 0600, and a reader sees a file's old or new
content, never a partial write. Folders that already exist keep their mode.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

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
