"""Chinese word segmentation with jieba, loaded only when Chinese text is seen, started fast.

jieba's own start-up unmarshals a 500,000-entry prefix dictionary (about 0.7 s). `Segmenter`
instead keeps that dictionary in a cache file under `cache_dir` (memory.pieces: the words
sorted, in blocks of 256 with their frequencies, the first word of each block in the header)
and answers jieba's look-ups from the block a word would be in, read when first needed: a cold
process cutting a query reads a few dozen small blocks. Segmentation output is exactly jieba's:
the same words, frequencies and total are used. A block that turns out corrupt when read makes
the cache be built again. jieba's log chatter on stderr is silenced.
"""

from __future__ import annotations

import logging
import marshal
import sys
from bisect import bisect_right
from collections.abc import Mapping
from pathlib import Path

from memory import pieces

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any

_CACHE_VERSION = 2
_MAGIC = b"CTXMJBA2"
_BLOCK = 256  # words per block of the cache file


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


class FrequencyTable:
    """jieba's FREQ mapping (word or word prefix -> frequency) over the cache file's blocks."""

    def __init__(self, firsts: list[str], blocks: Mapping[object, pieces.Piece]):
        self._firsts, self._pieces = firsts, blocks
        self._blocks: dict[int, dict[str, int]] = {}

    def _find(self, word: str) -> int | None:
        i = bisect_right(self._firsts, word) - 1
        if i < 0:
            return None
        block = self._blocks.get(i)
        if block is None:
            block = self._blocks[i] = marshal.loads(bytes(self._pieces[i]))
        return block.get(word)

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


def _build_cache(jieba, path: Path | None) -> tuple[dict[str, int], int]:
    """jieba's dictionary (word -> frequency, total), written to `path` as the cache."""
    tokenizer = jieba.Tokenizer()
    freq, total = tokenizer.gen_pfdict(tokenizer.get_dict_file())
    if path is not None:
        words = sorted(freq)
        blocks = [words[i : i + _BLOCK] for i in range(0, len(words), _BLOCK)]
        header = {"version": _CACHE_VERSION, "jieba": jieba.__version__, "total": total, "firsts": [b[0] for b in blocks]}
        pieces.write(path, _MAGIC, header, {i: marshal.dumps({w: freq[w] for w in b}) for i, b in enumerate(blocks)})
        for stale in path.parent.glob("jieba-dict-v*.bin"):  # caches of other versions
            if stale != path:
                stale.unlink(missing_ok=True)
    return freq, total


def _load_cache(jieba, path: Path) -> tuple[FrequencyTable, int] | None:
    try:
        header, blocks, _ = pieces.read(path, _MAGIC)
        if header["version"] != _CACHE_VERSION or header["jieba"] != jieba.__version__:
            return None
        firsts = header["firsts"]
        if set(blocks) != set(range(len(firsts))):  # the blocks 0 .. len(firsts) - 1, no other
            return None
        return FrequencyTable(firsts, blocks), header["total"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


class Segmenter:
    """Cuts Chinese text into jieba words; `cache_dir=None` keeps the dictionary in memory only."""

    def __init__(self, cache_dir: Path | None):
        self._cache_dir = cache_dir
        self._tokenizer: Any = None  # a jieba.Tokenizer once loaded (jieba ships no types)

    def _load(self, rebuild: bool = False):
        jieba = _import_jieba()
        path = self._cache_dir / f"jieba-dict-v{_CACHE_VERSION}.bin" if self._cache_dir else None
        loaded = _load_cache(jieba, path) if path and path.exists() and not rebuild else None
        freq, total = loaded or _build_cache(jieba, path)
        tokenizer = jieba.Tokenizer()
        tokenizer.FREQ, tokenizer.total = freq, total
        tokenizer.initialized = True
        return tokenizer

    def cut(self, text: str) -> list[str]:
        if self._tokenizer is None:
            self._tokenizer = self._load()
        try:
            return list(self._tokenizer.cut(text, HMM=True))
        except pieces.CorruptPiece:
            self._tokenizer = self._load(rebuild=True)
            return list(self._tokenizer.cut(text, HMM=True))
