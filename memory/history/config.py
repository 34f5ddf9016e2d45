"""The history store's configuration, built by the faces (`ctxmill.settings.Settings.history`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAX_BYTES = 256 * 2**20


@dataclass(frozen=True)
class HistoryConfig:
    """path: the SQLite file (one per user). max_bytes: the store is kept at or under this size,
    the sessions least recently updated evicted first. enabled: False and nothing is ingested
    (search still reads what is there). cache_dir: the tokenizer's cache (jieba is not used: CJK
    text gives characters and bigrams). max_message_chars: a longer message keeps its head and a
    notice of what was left out. regex_seconds: the time a regular-expression search may take."""

    path: Path
    max_bytes: int = DEFAULT_MAX_BYTES
    enabled: bool = True
    cache_dir: Path | None = None
    redact_extra: tuple[str | tuple[str, str], ...] = ()
    redact_allow: tuple[str, ...] = ()
    max_message_chars: int = 32_000
    regex_seconds: float = 2.0
