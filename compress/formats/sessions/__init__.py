"""Session readers: recorded agent sessions -> `Transcript` (provider-shaped request bodies).

`FORMATS` holds one reader module per recording format; each has `NAME`, `sniff(sample)` (the
first parsed lines, or the whole JSON object) and either `read(text)` (JSONL) or
`read_object(data)` (one JSON object). `read_session(path, fmt=None)` reads one file in any of
them, recognised from its content unless `fmt` names one; it reads only a regular file of at
most `max_bytes` (a named pipe or a device is refused unread). Readers never raise on bad content:
unreadable lines or items are counted in `Transcript.malformed`. A file that is neither JSON nor
JSONL of a known format raises `UnknownFormat` with a one-line reason.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from ground.files import read_regular
from compress.formats.sessions import claude_code, claude_flat, codex, craft, opencode, request_body, swe_agent
from compress.formats.sessions.transcript import Transcript

FORMATS: dict[str, ModuleType] = {m.NAME: m for m in (
    claude_code, claude_flat, codex, opencode, craft, swe_agent, request_body)}
"""Format name -> reader module, in detection order (first whose `sniff` accepts wins)."""

SESSION_SUFFIXES = (".jsonl", ".json", ".traj")
MAX_SESSION_BYTES = 512 * 2**20
"""The largest session file `read_session` reads by default."""
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
    out = []
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


def read_session(path: str | Path, fmt: str | None = None, max_bytes: int = MAX_SESSION_BYTES) -> Transcript:
    """Read one session file (OSError when unreadable, not a regular file or larger than
    `max_bytes`; UnknownFormat when not a session)."""
    return read_text(read_regular(path, max_bytes).decode("utf-8", errors="replace"), fmt)


def session_files(folder: str | Path) -> list[Path]:
    """Session-looking files under a folder, sorted."""
    return sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.suffix in SESSION_SUFFIXES)
