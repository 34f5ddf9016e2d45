"""The index file (memory.pieces under memory.index_file): a search reads the header and the few
pieces it needs, and a piece that turns out corrupt only when read is rebuilt from the memory
files like a corrupt header is."""

import warnings

import pytest

from memory import api, pieces
from memory.index_file import CorruptIndexWarning


@pytest.fixture(autouse=True)
def fresh_process_cache():
    api._indexes.clear()
    yield
    api._indexes.clear()


@pytest.fixture
def filled(cfg):
    """300 entries (words w0..w299, one per entry, plus a shared word), index saved, not open."""
    cfg.project_home.mkdir(parents=True)
    lines = [f"- entry {i} mentions w{i} and the shared word <!-- m-{i:08x} 2025-01-01 -->\n" for i in range(300)]
    (cfg.project_home / api.MEMORY_FILE).write_text("# Memory\n\n## Facts\n\n" + "".join(lines), encoding="utf-8")
    api.search(cfg, "warm")
    api._indexes.clear()
    return cfg


def _index_file(cfg):
    return cfg.project_home / api.INDEX_FILE


def test_a_cold_search_reads_the_header_and_only_the_pieces_it_needs(filled, monkeypatch):
    reads = []
    original = pieces._Reader.read
    monkeypatch.setattr(pieces._Reader, "read", lambda self, start, size: reads.append(size) or original(self, start, size))
    [hit] = api.search(filled, "w123", limit=1)
    assert hit.entry.text == "entry 123 mentions w123 and the shared word"
    size = _index_file(filled).stat().st_size
    # the start and the header, then lengths, meta, the buckets of w123 and 123, one chunk of rows
    assert len(reads) <= 7 and sum(reads[2:]) < size / 4


def test_saving_after_a_change_keeps_every_piece_it_did_not_read(filled):
    api.store(filled, "fact", "a new entry about w7")
    api._indexes.clear()
    assert [h.entry.id for h in api.search(filled, "w299", limit=1)] == ["m-0000012b"]
    assert len(api.search(filled, "w7", limit=5)) == 2


def _corrupt_piece(cfg, key) -> None:
    path = _index_file(cfg)
    _, parts, _ = pieces.read(path, b"CTXMIDX3")
    start = parts[key]._start
    blob = bytearray(path.read_bytes())
    blob[start + 3] ^= 0xFF
    path.write_bytes(bytes(blob))


def _bucket_of(cfg, term: str) -> int:
    from memory.bm25 import _bucket

    return _bucket(api.tokenizer(cfg).tokens(term)[0])


def test_a_corrupt_piece_read_by_a_search_warns_and_is_rebuilt(filled):
    _corrupt_piece(filled, ("postings", _bucket_of(filled, "w42")))
    assert api.search(filled, "w41", limit=1)  # another bucket: still answered from the file
    with pytest.warns(CorruptIndexWarning, match="checksum"):
        [hit] = api.search(filled, "w42", limit=1)
    assert hit.entry.id == "m-0000002a"
    api._indexes.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert api.search(filled, "w42", limit=1)[0].entry.id == "m-0000002a"


def test_a_corrupt_piece_met_by_a_store_warns_and_the_next_search_rebuilds(filled):
    _corrupt_piece(filled, "keys")  # a store looks up entry keys
    with pytest.warns(CorruptIndexWarning, match="checksum"):
        api.forget(filled, "m-00000005")
    assert not _index_file(filled).exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert api.search(filled, "w5", limit=1) == []
        assert api.search(filled, "w6", limit=1)[0].entry.id == "m-00000006"


def test_an_index_file_cut_short_under_an_open_index_is_rebuilt(filled):
    api.search(filled, "w1")  # open in this process, most pieces not read yet
    path = _index_file(filled)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # in place: the same file, shorter
    with pytest.warns(CorruptIndexWarning):
        assert api.search(filled, "w250", limit=1)[0].entry.id == "m-000000fa"


CHINESE = ["北京大学的学生在图书馆学习", "数据库连接池的大小是二十", "战国无双是光荣开发的游戏", "我们在北京大学学习机器学习",
           "图书馆的开放时间是早上八点", "游戏角色的设计由美术团队负责"]
QUERIES = ["北京大学", "北京的大学", "连接池大小", "图书馆", "战国无双的游戏角色", "机器学习是什么", "大学学生", "光荣的游戏",
           "美术团队负责设计", "早上八点开放"]


def test_the_long_words_of_the_index_follow_its_entries(cfg):
    stored = [api.store(cfg, "fact", text) for text in CHINESE]
    index = api.open_index(cfg)
    assert index.has_long_word("北京大学") and index.has_long_word("图书馆") and not index.has_long_word("北京")
    for entry in stored:
        if "北京大学" in entry.text:
            api.forget(cfg, entry.id)
    assert not api.open_index(cfg).has_long_word("北京大学") and api.open_index(cfg).has_long_word("图书馆")
    api._indexes.clear()  # as saved
    assert not api.open_index(cfg).has_long_word("北京大学") and api.open_index(cfg).has_long_word("图书馆")


@pytest.mark.parametrize("query", QUERIES)
def test_a_query_skips_jieba_only_where_its_words_could_match_nothing(cfg, monkeypatch, query):
    """Hits, scores and snippets are those of a search that cuts every CJK run with jieba."""
    from memory.cjk import Segmenter
    from memory.index_file import SearchIndex

    for text in CHINESE:
        api.store(cfg, "fact", text)
    index = api.open_index(cfg)  # built (its entries cut) before the query
    cuts = []
    original = Segmenter.cut
    monkeypatch.setattr(Segmenter, "cut", lambda self, text: cuts.append(text) or original(self, text))
    hits = [(h.entry.id, h.score, h.snippet) for h in api.search(cfg, query)]
    known = [query[i:j] for i in range(len(query)) for j in range(i + 3, len(query) + 1) if index.has_long_word(query[i:j])]
    assert cuts == ([query] if known else [])
    monkeypatch.setattr(SearchIndex, "has_long_word", lambda self, text: True)  # every run cut
    assert [(h.entry.id, h.score, h.snippet) for h in api.search(cfg, query)] == hits and hits
