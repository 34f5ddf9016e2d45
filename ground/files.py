"""Private files, lock files and atomic writes for everything persisted under `.ctxmill/`, and
bounded reads of files someone else names.

What must hold: folders the project creates are 0700 (every missing component, not only the
leaf as `Path.mkdir(parents=True)` would do), files and lock files 0600, and a reader sees a file's old or new
content, never a partial write. Folders that already exist keep their mode. `read_regular`
never blocks on a pipe and never reads more than it was allowed (a device like /dev/zero is
endless); `read_inside` is that, and the file it read lies inside the folder it was asked about
once every link is resolved (a cloned repository's `MEMORY.md -> ~/.ssh/id_rsa` is refused).

Nothing written here follows a symbolic link (a cloned repository may ship
`.ctxmill/ctxmill.log -> ~/.bashrc`, a neighbour may pre-create a folder in /tmp):
- the folder written into is a real folder owned by this user, and its path holds no symbolic
  link at all (`confined`): the faces resolve the user's own homes at the edge
  (`ctxmill.paths`), so a link can only come from a place someone else wrote;
- the last component is opened with O_NOFOLLOW (or created with O_EXCL, or renamed over).
Refusals are OSError (PermissionError or ELOOP) naming the path; callers fail open.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing it (memory searches read here)
if TYPE_CHECKING:
    from typing import BinaryIO

    from filelock import BaseFileLock

DIR_MODE = 0o700
FILE_MODE = 0o600


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _unlinked(folder: Path) -> None:
    """OSError ELOOP unless `folder`'s path holds no symbolic link."""
    if os.path.realpath(folder) != str(folder):
        raise OSError(errno.ELOOP, "refused: the path goes through a symbolic link", str(folder))


def confined(folder: Path, whole_path: bool = True) -> Path:
    """`folder` if it is a real folder owned by this user and its path holds no symbolic link
    (`whole_path=False`: the folder's own entry is not one); else PermissionError (another
    owner) or OSError ELOOP (a link) naming it."""
    folder = Path(os.path.abspath(folder))
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode):
        raise OSError(errno.ELOOP, "refused: a symbolic link", str(folder))
    if whole_path:
        _unlinked(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(folder))
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise PermissionError(errno.EPERM, f"refused: owned by uid {info.st_uid}, not by this user", str(folder))
    return folder


def private_dir(path: Path, runtime: bool = False) -> Path:
    """Create `path` and its missing parents as 0700 folders (never inside a linked folder);
    return it once `confined`. `runtime`: a folder in a place every user writes to
    (`/tmp/ctxmill-<uid>`), which someone else may have created first: its parents are the
    system's (links allowed), its own entry must be ours and not a link."""
    path = Path(os.path.abspath(path))
    missing: list[Path] = []
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            if missing and not runtime:
                _unlinked(folder)
            break
        missing.append(folder)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=DIR_MODE)
            os.chmod(folder, DIR_MODE)  # mkdir's mode is masked by the umask
    confined(path, whole_path=not runtime)
    return path


def not_links(*paths: Path) -> None:
    """OSError ELOOP naming the first of `paths` that is a symbolic link (files a library opens
    by itself, following links: SQLite's journal beside its database)."""
    for path in paths:
        if os.path.islink(path):
            raise OSError(errno.ELOOP, "refused: a symbolic link", str(path))


def open_private(path: Path, flags: int = os.O_RDWR) -> int:
    """A file descriptor on `path` (created 0600 if missing) in a `private_dir` folder, opened
    without following a link at its last component (ELOOP when it is one)."""
    path = Path(path)
    private_dir(path.parent)
    return os.open(path, flags | os.O_CREAT | _NOFOLLOW, FILE_MODE)


def private_file(path: Path) -> Path:
    """Create `path` (0600) if it does not exist yet; an existing file is left as it is."""
    os.close(open_private(path))
    return path


def copy_keeping_mode(source: Path, target: Path) -> None:
    """Copy `source` to a new file `target` created with `source`'s permission bits (never
    looser for a moment: created with them, not chmod-ed after); FileExistsError when `target`
    exists, ELOOP when it is a link."""
    data = Path(source).read_bytes()
    mode = stat.S_IMODE(os.stat(source).st_mode)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def private_lock(path: Path, timeout: float = -1) -> BaseFileLock:
    """A `filelock.FileLock` on `path` whose lock file is 0600 in a private folder (imported on
    first use: processes that take no lock never pay for it). The lock file is created here
    without following a link; filelock then opens the file that is there."""
    from filelock import FileLock

    path = Path(path)
    private_file(path)
    return FileLock(str(path), mode=FILE_MODE, timeout=timeout)


def atomic_write(path: Path, data: bytes, fsync: bool = True) -> None:
    """Write `data` to a 0600 temp file beside `path`, then rename it over `path`."""
    path = Path(path)
    private_dir(path.parent)
    fd, tmp = _new_beside(path)
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


def _new_beside(path: Path) -> tuple[int, str]:
    """A new 0600 file beside `path` (`.NAME<random>.tmp`), created with O_EXCL and opened for
    writing, and its name: as `tempfile.mkstemp`, which a quick hook's process would import with
    `shutil`, `random` and the compressors (~3 ms) for one name."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path))


def read_regular(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of the regular file at `path`. OSError (its `filename` set, its `strerror` one
    line) when `path` is not a regular file (a pipe, a device, a folder: opened without blocking
    and never read) or holds more than `max_bytes`."""
    with open_regular(path) as source:
        return read_at_most(source, max_bytes, str(path))


def read_inside(path: str | Path, root: str | Path, max_bytes: int) -> bytes:
    """The bytes of the regular file at `path`, which must lie inside the folder `root` once
    every symbolic link on the way is resolved: a link that stays inside `root` is followed, one
    that leaves it is refused (OSError EXDEV naming `path`). Else as `read_regular`."""
    with open_inside(path, root) as source:
        return read_at_most(source, max_bytes, str(path))


def open_inside(path: str | Path, root: str | Path) -> BinaryIO:
    """The regular file at `path` opened for reading (binary), refused as `read_inside` says.

    The check is made on the file actually opened (its device and inode against those of the
    resolved path), so a link swapped in between the check and the open is refused too."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root:
        raise OSError(errno.EXDEV, "refused: a link out of its folder", str(path))
    source = open_regular(path)
    opened, resolved = os.fstat(source.fileno()), _stat_or_none(real)
    if resolved is None or (opened.st_dev, opened.st_ino) != (resolved.st_dev, resolved.st_ino):
        source.close()
        raise OSError(errno.EXDEV, "refused: the file changed while it was opened", str(path))
    return source


def _stat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def open_regular(path: str | Path, follow: bool = True) -> BinaryIO:
    """The regular file at `path` opened for reading (binary), or OSError as `read_regular` says;
    `follow=False`: OSError ELOOP when `path` itself is a symbolic link."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | (getattr(os, "O_CLOEXEC", 0) if follow else _NOFOLLOW))
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
