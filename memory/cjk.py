"""Chinese word segmentation with jieba, loaded only when Chinese text is seen, started fast.

jieba's own start-up unmarshals a 500,000-entry prefix dictionary (about 0.7 s). `Segmenter`
instead keeps that dictionary in a compact cache file under `cache_dir` (sorted UTF-8 words,
offsets, frequencies) and answers jieba's look-ups by binary search until enough look-ups were
made to make a real dict worth building. Segmentation output is exactly jieba's: the same
words, frequencies and total are used. jieba's log chatter on stderr is silenced.
"""

from __future__ import annotations

import logging
import marshal
import sys
from array import array
from bisect import bisect_left
from pathlib import Path

_CACHE_VERSION = 1
# After this many look-ups a dict is cheaper than binary search.
_DICT_AFTER_LOOKUPS = 40_000


def _import_jieba():
    """Import jieba without pkg_resources (jieba only uses it to open its data files; it costs 90 ms)."""
    block = "pkg_resources" not in sys.modules
    if block:
        sys.modules["pkg_resources"] = None  # makes `import pkg_resources` raise ImportError
    try:
        import jieba
    finally:
        if block:
            del sys.modules["pkg_resources"]
    jieba.setLogLevel(logging.WARNING)
    return jieba


class _Words:
    """Sequence view of the sorted UTF-8 words, for bisect."""

    def __init__(self, blob: bytes, offsets: array):
        self.blob, self.offsets = blob, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> bytes:
        return self.blob[self.offsets[i] : self.offsets[i + 1] - 1]


class FrequencyTable:
    """jieba's FREQ mapping (word or word prefix -> frequency) over the compact cache."""

    def __init__(self, blob: bytes, offsets: array, freqs: array):
        self._words = _Words(blob, offsets)
        self._freqs = freqs
        self._dict: dict[str, int] | None = None
        self._lookups = 0

    def _find(self, word: str) -> int | None:
        if self._dict is not None:
            return self._dict.get(word)
        self._lookups += 1
        if self._lookups > _DICT_AFTER_LOOKUPS:
            words = self._words.blob.decode("utf-8").split("\n")[:-1]
            self._dict = dict(zip(words, self._freqs))
            return self._dict.get(word)
        key = word.encode("utf-8")
        i = bisect_left(self._words, key)
        if i < len(self._words) and self._words[i] == key:
            return self._freqs[i]
        return None

    def __contains__(self, word: str) -> bool:
        return self._find(word) is not None

    def __getitem__(self, word: str) -> int:
        found = self._find(word)
        if found is None:
            raise KeyError(word)
        return found

    def get(self, word: str, default=None):
        found = self._find(word)
        return default if found is None else found


def _build_cache(jieba, path: Path | None) -> tuple[bytes, array, array, int]:
    tokenizer = jieba.Tokenizer()
    freq, total = tokenizer.gen_pfdict(tokenizer.get_dict_file())
    items = sorted((word.encode("utf-8"), count) for word, count in freq.items())
    blob = b"".join(word + b"\n" for word, _ in items)
    offsets = array("I", [0])
    for word, _ in items:
        offsets.append(offsets[-1] + len(word) + 1)
    freqs = array("I", (count for _, count in items))
    if path is not None:
        from ground.files import atomic_write

        atomic_write(path, marshal.dumps((_CACHE_VERSION, jieba.__version__, total, blob, offsets.tobytes(), freqs.tobytes())), fsync=False)
    return blob, offsets, freqs, total


def _load_cache(jieba, path: Path) -> tuple[bytes, array, array, int] | None:
    try:
        version, jieba_version, total, blob, raw_offsets, raw_freqs = marshal.loads(path.read_bytes())
        if version != _CACHE_VERSION or jieba_version != jieba.__version__:
            return None
        offsets, freqs = array("I"), array("I")
        offsets.frombytes(raw_offsets)
        freqs.frombytes(raw_freqs)
        if len(offsets) != len(freqs) + 1 or offsets[-1] != len(blob):
            return None
        return blob, offsets, freqs, total
    except (OSError, ValueError, EOFError, TypeError):
        return None


class Segmenter:
    """Cuts Chinese text into jieba words; `cache_dir=None` keeps the dictionary in memory only."""

    def __init__(self, cache_dir: Path | None):
        self._cache_dir = cache_dir
        self._tokenizer = None

    def _load(self):
        jieba = _import_jieba()
        path = self._cache_dir / f"jieba-dict-v{_CACHE_VERSION}.bin" if self._cache_dir else None
        loaded = _load_cache(jieba, path) if path and path.exists() else None
        blob, offsets, freqs, total = loaded or _build_cache(jieba, path)
        tokenizer = jieba.Tokenizer()
        tokenizer.FREQ = FrequencyTable(blob, offsets, freqs)
        tokenizer.total = total
        tokenizer.initialized = True
        return tokenizer

    def cut(self, text: str) -> list[str]:
        if self._tokenizer is None:
            self._tokenizer = self._load()
        return list(self._tokenizer.cut(text, HMM=True))
