"""Session readers: recorded agent sessions -> `Transcript` (provider-shaped request bodies).

`FORMATS` holds one reader module per recording format; each has `NAME`, `sniff(sample)` (the
first parsed lines, or the whole JSON object) and either `read(text)` (JSONL) or
`read_object(data)` (one JSON object). `read_session(path, fmt=None)` reads one file in any of
them, recognised from its content unless `fmt` names one; it reads only a regular file of at
most `max_bytes` (a named pipe or a device is refused unread), line by line: a line over
`max_line_bytes` (a tool output of hundreds of megabytes) is read past, never held whole, and
counted in `Transcript.skipped` under OVERSIZED. What is kept of it is its first and last
`KEEP_BYTES` (at most a quarter of the limit each) with a note of what was cut between them, when that splice is valid JSON (the cut
falls inside one long string, as in a huge tool output), else nothing (the line is left out).
So one line never costs more than `max_line_bytes` in memory or parsing. Readers never raise on bad content:
unreadable lines or items are counted in `Transcript.malformed`. A file that is neither JSON nor
JSONL of a known format raises `UnknownFormat` with a one-line reason. `read_session_pieces` reads
a long JSONL session as consecutive transcripts of about PIECE_BYTES each, cut only where its
format's `starts_turn` says a person's prompt begins (Claude Code, Codex).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from compress.formats.sessions import claude_code, claude_flat, codex, craft, opencode, request_body, swe_agent
from compress.formats.sessions.transcript import Transcript
from ground.files import open_regular

FORMATS: dict[str, ModuleType] = {m.NAME: m for m in (
    claude_code, claude_flat, codex, opencode, craft, swe_agent, request_body)}
"""Format name -> reader module, in detection order (first whose `sniff` accepts wins)."""

SESSION_SUFFIXES = (".jsonl", ".json", ".traj")
MAX_SESSION_BYTES = 512 * 2**20
"""The largest session file `read_session` reads by default."""
MAX_LINE_BYTES = 8 * 2**20
"""The longest line `read_session` keeps by default."""
PIECE_BYTES = 8 * 2**20
"""About how much of a session `read_session_pieces` reads at a time."""
OVERSIZED = "line over the length limit (cut or left out)"
KEEP_BYTES = 32 * 1024
_CHUNK = 2**20
_SAMPLE_LINES = 40


class UnknownFormat(ValueError):
    """The file is not a session in a format ctxmill reads (the message says why)."""


def _whole_json(text: str) -> Any:
    """The file as one JSON value, or None when it is not one (e.g. JSONL)."""
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None


def _sample(text: str) -> list[Any]:
    out: list[Any] = []
    for line in text.splitlines():
        if len(out) >= _SAMPLE_LINES:
            break
        if line.strip():
            try:
                out.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
    return out


def _sniff_format(text: str, whole: Any) -> str:
    sample = [whole] if isinstance(whole, dict) else _sample(text)
    for name, module in FORMATS.items():
        if (hasattr(module, "read_object")) == isinstance(whole, dict) and module.sniff(sample):
            return name
    raise UnknownFormat("not a session format ctxmill reads (" + ", ".join(FORMATS) + ")")


def read_text(text: str, fmt: str | None = None) -> Transcript:
    if fmt is not None and fmt not in FORMATS:
        raise UnknownFormat(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    whole = _whole_json(text)
    name = fmt or _sniff_format(text, whole)
    module = FORMATS[name]
    if hasattr(module, "read_object"):
        if not isinstance(whole, dict):
            raise UnknownFormat(f"format {name} needs one JSON object")
        return module.read_object(whole)
    return module.read(text)


def read_session(path: str | Path, fmt: str | None = None, max_bytes: int = MAX_SESSION_BYTES,
                 max_line_bytes: int = MAX_LINE_BYTES) -> Transcript:
    """Read one session file (OSError when unreadable, not a regular file or larger than
    `max_bytes`; UnknownFormat when not a session)."""
    with _opened(path, max_bytes) as source:
        kept, oversized = _bounded_lines(source, max_bytes, max_line_bytes, str(path))
    return _transcript(kept, oversized, fmt)


def read_session_pieces(path: str | Path, fmt: str | None = None, piece_bytes: int = PIECE_BYTES,
                        max_bytes: int = MAX_SESSION_BYTES, max_line_bytes: int = MAX_LINE_BYTES
                        ) -> Iterator[Transcript]:
    """The session at `path` as consecutive transcripts, each of about `piece_bytes` of its
    lines, so a reader holds one piece at a time (history imports of sessions of hundreds of
    megabytes). A piece ends only before a line its format's `starts_turn` accepts (a person's
    new prompt: no call waits for its result across the cut), so the pieces' messages, one after
    the other, are the session's. A file no larger than `piece_bytes`, a file of one JSON
    object and a format without `starts_turn` are one piece, as `read_session` reads them.
    Errors as `read_session`'s, raised by the first piece."""
    with _opened(path, max_bytes) as source:
        lines = _lines(source, max_bytes, max_line_bytes, str(path))
        piece, cut, size = [], 0, 0
        for line, shortened in lines:
            piece.append(line)
            cut, size = cut + shortened, size + len(line)
            if size >= piece_bytes:
                break
        else:  # the whole file
            yield _transcript(piece, cut, fmt)
            return
        text = b"".join(piece).decode("utf-8", errors="replace")
        name = fmt or _sniff_format(text, _whole_json(text))
        starts_turn = getattr(FORMATS[name], "starts_turn", None)
        for line, shortened in lines:
            if starts_turn is not None and size >= piece_bytes and _starts_turn(starts_turn, line):
                yield _transcript(piece, cut, name)
                piece, cut, size = [], 0, 0
            piece.append(line)
            cut, size = cut + shortened, size + len(line)
    yield _transcript(piece, cut, name)


def _starts_turn(accepts, line: bytes) -> bool:
    try:
        item = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(item, dict) and accepts(item)


def _opened(path: str | Path, max_bytes: int):
    source = open_regular(path)
    if os.fstat(source.fileno()).st_size > max_bytes:
        source.close()
        raise OSError(errno.EFBIG, f"larger than {max_bytes:,} bytes", str(path))
    return source


def _transcript(lines: list[bytes], oversized: int, fmt: str | None) -> Transcript:
    transcript = read_text(b"".join(lines).decode("utf-8", errors="replace"), fmt)
    if oversized:
        transcript.skipped[OVERSIZED] += oversized
    return transcript


def _bounded_lines(source, max_bytes: int, max_line_bytes: int, name: str) -> tuple[list[bytes], int]:
    """The lines of `source` (each with its line end), those over `max_line_bytes` shortened (see
    the module docstring), and how many were. OSError (EFBIG) past `max_bytes` in all."""
    kept, oversized = [], 0
    for line, shortened in _lines(source, max_bytes, max_line_bytes, name):
        kept.append(line)
        oversized += shortened
    return kept, oversized


def _lines(source, max_bytes: int, max_line_bytes: int, name: str) -> Iterator[tuple[bytes, bool]]:
    """`_bounded_lines` one at a time, each with whether it was shortened."""
    total = 0
    keep = min(KEEP_BYTES, max_line_bytes // 4)  # head and tail never overlap
    while line := source.readline(max_line_bytes + 1):
        total += len(line)
        oversized = len(line) > max_line_bytes and not line.endswith(b"\n")
        if oversized:
            tail, cut = line[-keep:], len(line) - 2 * keep
            while chunk := source.readline(_CHUNK):
                total += len(chunk)
                cut += len(chunk)
                tail = (tail + chunk)[-keep - 1:]
                if chunk.endswith(b"\n") or total > max_bytes:
                    break
            line = _spliced(line[:keep], tail.rstrip(b"\r\n"), cut) + b"\n"
        if total > max_bytes:
            raise OSError(errno.EFBIG, f"larger than {max_bytes:,} bytes", name)
        yield line, oversized


def _spliced(head: bytes, tail: bytes, cut: int) -> bytes:
    """`head` + a note + `tail` when that is valid JSON (the cut is inside one string; a few bytes
    are dropped at either side so no escape is split), else b"" (a blank line)."""
    note = f" [ctxmill: {cut:,} bytes of this line were not read] ".encode()
    for drop_head in range(7):
        for drop_tail in range(7):
            line = head[: len(head) - drop_head] + note + tail[drop_tail:]
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            return line
    return b""


def session_files(folder: str | Path) -> list[Path]:
    """Session-looking files under a folder, sorted."""
    return sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.suffix in SESSION_SUFFIXES)
