"""A file of one header and named byte pieces, each read and checked only when first needed.

Layout: magic (8 bytes) | header size (4 bytes, little-endian) | xxh3-64 of the header (8) |
header (marshal) | the pieces, one after the other. The header is the writer's plus "pieces":
key -> (start, end, xxh3-64) within the piece region; `read` gives back the writer's header and
the pieces by key.

What must hold:
- `read` checks the magic and the header's hash and reads nothing else, so opening a large file
  costs its header; a piece is made when first asked for.
- `bytes(piece)` reads the piece (`os.pread` on a descriptor held open: a file that another
  process replaces meanwhile, as `ground.files.atomic_write` does, is still the file that was
  opened) and checks its hash; a piece that is short or does not match raises `CorruptPiece`.
- `write` replaces the file atomically; pieces may be bytes or pieces of an earlier file.
"""

from __future__ import annotations

import errno
import marshal
import os
import weakref
from collections.abc import Mapping
from pathlib import Path

import xxhash

_SIZE = 4


class CorruptPiece(ValueError):
    """A piece read later did not check out (the file was cut or changed in place)."""


class WrongMagic(ValueError):
    """The file does not start with the magic asked for; `found` is what it starts with."""

    def __init__(self, found: bytes):
        super().__init__(f"not this kind of file (starts with {found!r})")
        self.found = found


class _Reader:
    """Reads spans of one opened file: `os.pread` where there is one, else the bytes read at once
    (a descriptor held open would keep other processes from replacing the file there). The file
    is opened as `ground.home_files` opens a home's file: regular, inside `root` once links are
    resolved, at most INDEX_BYTES."""

    def __init__(self, path: Path, root: Path):
        from ground.home_files import INDEX_BYTES, open_home_file

        source = open_home_file(root, Path(path).relative_to(root))
        if source is None:
            raise FileNotFoundError(errno.ENOENT, "no such file", str(path))
        self._stat = os.fstat(source.fileno())
        if self._stat.st_size > INDEX_BYTES:
            source.close()
            raise OSError(errno.EFBIG, f"larger than {INDEX_BYTES:,} bytes", str(path))
        if hasattr(os, "pread"):
            self._fd = os.dup(source.fileno())
            source.close()
            weakref.finalize(self, os.close, self._fd)
            self._data = None
        else:  # pragma: no cover - Windows
            with source:
                self._data = source.read()

    def read(self, start: int, size: int) -> bytes:
        if self._data is not None:  # pragma: no cover - Windows
            return self._data[start : start + size]
        return os.pread(self._fd, size, start)

    def stat(self) -> os.stat_result:
        return self._stat


class Piece:
    """One piece of a file opened by `read`; `bytes(piece)` reads and checks it."""

    __slots__ = ("_reader", "_start", "_size", "_digest")

    def __init__(self, reader: _Reader, start: int, size: int, digest: int):
        self._reader, self._start, self._size, self._digest = reader, start, size, digest

    def __len__(self) -> int:
        return self._size

    def __bytes__(self) -> bytes:
        data = self._reader.read(self._start, self._size)
        if len(data) != self._size or xxhash.xxh3_64_intdigest(data) != self._digest:
            raise CorruptPiece(f"checksum mismatch in the piece at byte {self._start}")
        return data


class Pieces(Mapping[object, "Piece"]):
    """key -> Piece of one file opened by `read`."""

    def __init__(self, reader: _Reader, base: int, spans: dict):
        self._reader, self._base, self._spans = reader, base, spans

    def __getitem__(self, key) -> Piece:
        first, last, digest = self._spans[key]
        if not 0 <= first <= last <= self._reader.stat().st_size - self._base:  # never past the end
            raise CorruptPiece(f"the piece {key!r} has no place in the file")
        return Piece(self._reader, self._base + first, last - first, digest)

    def __contains__(self, key) -> bool:
        return key in self._spans

    def __iter__(self):
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)


def write(path: Path, magic: bytes, header: dict, pieces: dict) -> None:
    """Write `header` and `pieces` (key -> bytes or Piece) to `path`, atomically, not fsync'd."""
    from ground.files import atomic_write

    spans, blobs, at = {}, [], 0
    for key, piece in pieces.items():
        blob = bytes(piece)
        spans[key] = (at, at + len(blob), xxhash.xxh3_64_intdigest(blob))
        blobs.append(blob)
        at += len(blob)
    head = marshal.dumps({**header, "pieces": spans})
    atomic_write(path, b"".join([magic, len(head).to_bytes(_SIZE, "little"), xxhash.xxh3_64_digest(head), head, *blobs]),
                 fsync=False)


def read(path: Path, magic: bytes, root: Path | None = None) -> tuple[dict, Pieces, os.stat_result]:
    """(header, key -> Piece, the stat of the file opened) of the file at `path`, which must lie
    inside `root` (default: its folder). WrongMagic when it is not this kind of file, ValueError
    when its header does not check out, OSError when it cannot be read or is refused."""
    reader = _Reader(path, path.parent if root is None else root)
    start = reader.read(0, len(magic) + _SIZE + 8)
    if start[: len(magic)] != magic:
        raise WrongMagic(start[: len(magic)])
    size = int.from_bytes(start[len(magic) : len(magic) + _SIZE], "little")
    if size > reader.stat().st_size:
        raise ValueError("header checksum mismatch (a header larger than the file)")
    head = reader.read(len(start), size)
    if len(head) != size or xxhash.xxh3_64_digest(head) != start[len(magic) + _SIZE :]:
        raise ValueError("header checksum mismatch")
    try:
        header = marshal.loads(head)
        spans = header.pop("pieces")
    except (EOFError, TypeError, KeyError, ValueError, AttributeError) as exc:
        raise ValueError(f"unreadable header ({exc.__class__.__name__})") from exc
    if not isinstance(spans, dict):
        raise ValueError("unreadable header (pieces)")
    return header, Pieces(reader, len(start) + size, spans), reader.stat()
