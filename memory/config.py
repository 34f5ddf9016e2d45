"""The one configuration object memory functions take. Faces build it (`ctxmill.settings.Settings.memory`)."""

from __future__ import annotations

from pathlib import Path

from ground.records import Record, field
from memory.bm25 import Bm25Params

# Tuned on SciFact train, CMRC trial and LoCoMo with `bench/memory_retrieval.py --tune`.
DEFAULT_BM25 = Bm25Params(k1=1.5, b=0.4, heading_weight=3.0)

# Half-life in days of an entry's score, per entry type; None = never decays.
DEFAULT_HALF_LIVES: dict[str, float | None] = {
    "constraint": None,
    "decision": 365.0,
    "gotcha": 365.0,
    "fact": 180.0,
    "note": 60.0,
}


class MemoryConfig(Record, slots=False):  # its defaults are read off the class (ctxmill.provenance)
    """Where memory lives and how it is searched.

    project_home: the project's `.ctxmill/` folder; global_home: the cross-project folder
    (e.g. ~/.local/share/ctxmill). Both hold MEMORY.md, notes.md and the `.index/` folder
    (the index lives in the project home and covers both); global_home/cache/memory holds the
    memory files as parsed (`memory.parsed`). cache_dir holds the jieba dictionary cache
    (default: global_home/cache).
    decay: an entry's decay d shrinks by half_lives[type], never below decay_floor; pinned
    entries and types with half-life None never decay (d = 1).
    recency: how much of d a search applies: a score is multiplied by 1 - recency * (1 - d), so
    with the defaults age takes at most 10% off (a tie-breaker; 1 would halve old entries' scores).
    """

    project_home: Path
    global_home: Path
    cache_dir: Path | None = None
    bm25: Bm25Params = DEFAULT_BM25
    decay: bool = True
    half_lives: dict[str, float | None] = field(default_factory=lambda: dict(DEFAULT_HALF_LIVES))
    decay_floor: float = 0.5
    recency: float = 0.2
    redact_extra: tuple[str | tuple[str, str], ...] = ()
    redact_allow: tuple[str, ...] = ()
    max_entry_chars: int = 2000
    """An entry longer than this (after redaction) is refused: memory holds the gist, files the detail."""
    inject_chars: int = 4000
    """Memory injected at session start, at most (about 1,000 tokens): pinned entries always, then
    the most useful others that fit (memory.inject); the rest stay searchable."""

    @property
    def jieba_cache(self) -> Path:
        return self.cache_dir or self.global_home / "cache"
