"""Library API: store/search/forget/list/pinned/reindex over real files in a temp project."""

import multiprocessing
import os
import warnings

import pytest

from memory import api
from memory.index_file import MAGIC, CorruptIndexWarning


@pytest.fixture(autouse=True)
def fresh_process_cache():
    api._indexes.clear()
    yield
    api._indexes.clear()


def test_store_then_search_finds_entry_with_file_section_and_snippet(cfg):
    api.store(cfg, "decision", "Use BM25 with identifier splitting for memory_store search", tags=["search"])
    api.store(cfg, "gotcha", "The CI runner has only two cores")
    hits = api.search(cfg, "how does memory store search work")
    assert hits[0].entry.text.startswith("Use BM25")
    assert hits[0].entry.section == "Decisions" and hits[0].entry.file.endswith("MEMORY.md")
    assert hits[0].snippet and hits[0].score > 0


def test_secrets_are_redacted_before_writing(cfg):
    entry = api.store(cfg, "fact", "deploy key ghp_" + "a1B2c3D4e5" * 4 + " and password=hunter2hunter2")
    content = (cfg.project_home / "MEMORY.md").read_text()
    assert "ghp_" not in content and "hunter2" not in content
    assert "[REDACTED:github_token]" in entry.text


def test_extra_redaction_patterns_from_config(cfg):
    cfg = cfg.replace(redact_extra=(("ticket", r"SECRET-\d+"),))
    assert api.store(cfg, "note", "see SECRET-42").text == "see [REDACTED:ticket]"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"type": "decision", "text": "  \n "}, "empty text"), ({"type": "idea", "text": "x"}, "unknown type"),
     ({"type": "note", "text": "x", "tags": ["bad tag"]}, "bad tag"), ({"type": "note", "text": "x", "scope": "team"}, "unknown scope")],
)
def test_bad_input_is_rejected(cfg, kwargs, message):
    with pytest.raises(api.BadInput, match=message):
        api.store(cfg, **kwargs)


def test_forget_removes_only_that_entry_and_unknown_id_fails(cfg):
    keep = api.store(cfg, "fact", "Python 3.11 is required")
    drop = api.store(cfg, "fact", "Python 3.9 is required")
    assert api.forget(cfg, drop.id).id == drop.id
    assert [e.id for e in api.list_entries(cfg)] == [keep.id]
    assert [h.entry.id for h in api.search(cfg, "python required")] == [keep.id]
    with pytest.raises(api.NotFound):
        api.forget(cfg, drop.id)


def test_set_pinned_pins_and_unpins_in_place_and_search_follows(cfg):
    first = api.store(cfg, "fact", "The API listens on port 8080")
    other = api.store(cfg, "decision", "Use SQLite for the savings ledger")
    pinned = api.set_pinned(cfg, first.id)
    assert pinned.pinned and pinned.id == first.id and pinned.text == first.text
    assert [e.id for e in api.pinned(cfg)] == [first.id]
    assert [e.id for e in api.list_entries(cfg)] == [first.id, other.id]  # same place in the file
    assert api.search(cfg, "port 8080")[0].entry.pinned
    assert not api.set_pinned(cfg, first.id, False).pinned and api.pinned(cfg) == []
    with pytest.raises(api.NotFound):
        api.set_pinned(cfg, "m-00000000")


def test_scopes_and_pins(cfg):
    local = api.store(cfg, "constraint", "Never push to main", pin=True)
    shared = api.store(cfg, "constraint", "Never push secrets", scope="global")
    assert {e.id for e in api.list_entries(cfg)} == {local.id, shared.id}
    assert [e.id for e in api.list_entries(cfg, "global")] == [shared.id]
    assert [e.id for e in api.pinned(cfg)] == [local.id]
    assert [h.entry.id for h in api.search(cfg, "never push", scope="global")] == [shared.id]


def test_hand_edits_are_picked_up_and_notes_are_searched(cfg):
    api.store(cfg, "fact", "placeholder")
    path = cfg.project_home / "MEMORY.md"
    path.write_text(path.read_text() + "- Hand written: the staging database is Postgres 16\n")
    (cfg.project_home / "notes.md").write_text("- quick capture about flaky websocket tests\n")
    assert api.search(cfg, "postgres staging")[0].entry.text.startswith("Hand written")
    assert api.search(cfg, "websocket")[0].entry.type == "note"


def test_older_entries_decay_but_constraints_and_pins_do_not(cfg):
    path = cfg.project_home / "MEMORY.md"
    path.parent.mkdir(parents=True)
    path.write_text(
        "## Notes\n- cache layer note old <!-- m-00000001 2000-01-01 -->\n- cache layer note new <!-- m-00000002 2099-01-01 -->\n"
        "## Constraints\n- cache layer constraint old <!-- m-00000003 2000-01-01 -->\n"
    )
    scores = {h.entry.id: h.score for h in api.search(cfg, "cache layer", limit=3)}
    assert scores["m-00000001"] < scores["m-00000002"]
    assert scores["m-00000003"] > scores["m-00000001"]
    no_decay = {h.entry.id: h.score for h in api.search(cfg.replace(decay=False), "cache layer", limit=3)}
    assert no_decay["m-00000003"] == pytest.approx(scores["m-00000003"])


def test_index_is_persisted_and_not_retokenized_when_files_are_unchanged(cfg, monkeypatch):
    api.store(cfg, "fact", "persisted index entry")
    api.search(cfg, "index")
    assert (cfg.project_home / ".index" / "index.bin").exists()
    api._indexes.clear()
    calls = []
    tokenizer = api.tokenizer(cfg)
    original, query_terms = tokenizer.tokens, tokenizer.query_terms
    monkeypatch.setattr(tokenizer, "tokens", lambda text: calls.append(text) or original(text))
    monkeypatch.setattr(tokenizer, "query_terms", lambda text, *a: calls.append(text) or query_terms(text, *a))
    os.utime(cfg.project_home / "MEMORY.md", ns=(1, 1_000_000_000))  # settled mtime
    api.search(cfg, "persisted")
    api._indexes.clear()
    assert api.search(cfg, "persisted")[0].entry.text == "persisted index entry"
    assert calls == ["persisted", "persisted"]  # only the queries were tokenized


def test_corrupt_index_is_rebuilt_with_a_warning(cfg):
    api.store(cfg, "fact", "survives corruption")
    api.search(cfg, "survives")
    index_file = cfg.project_home / ".index" / "index.bin"
    blob = bytearray(index_file.read_bytes())
    blob[-5] ^= 0xFF
    index_file.write_bytes(bytes(blob))
    api._indexes.clear()
    with pytest.warns(CorruptIndexWarning, match="checksum"):
        hits = api.search(cfg, "survives")
    assert hits[0].entry.text == "survives corruption"
    api._indexes.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert api.search(cfg, "survives")  # the rebuilt index is valid


def test_reindex_counts_entries(cfg):
    for i in range(3):
        api.store(cfg, "note", f"note number {i}")
    assert api.reindex(cfg) == 3


def _store_many(cfg, worker, count):
    for i in range(count):
        api.store(cfg, "note", f"worker {worker} entry {i}")


def test_concurrent_writers_lose_nothing(cfg):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_store_many, args=(cfg, w, 8)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    texts = {e.text for e in api.list_entries(cfg)}
    assert texts == {f"worker {w} entry {i}" for w in range(4) for i in range(8)}


def _no_parsing(monkeypatch):
    import memory.markdown

    def refuse(*args, **kwargs):
        raise AssertionError("the memory file was parsed again")

    monkeypatch.setattr(memory.markdown, "parse", refuse)


def test_store_and_forget_keep_the_index_in_step_without_re_reading_the_file(cfg, monkeypatch):
    for i in range(5):
        api.store(cfg, "fact", f"filler fact number {i}")
    api.search(cfg, "filler")  # the index is open in this process
    new = api.store(cfg, "decision", "Pin the base image to node:18-alpine")
    gone = api.store(cfg, "gotcha", "Flaky websocket test on CI")
    api.forget(cfg, gone.id)
    saves = []
    original_save = api.SearchIndex.save
    monkeypatch.setattr(api.SearchIndex, "save", lambda self, path: saves.append(path) or original_save(self, path))
    with monkeypatch.context() as patched:
        _no_parsing(patched)
        assert api.search(cfg, "node18")[0].entry.id == new.id
        assert api.search(cfg, "websocket") == []
        api.search(cfg, "filler")  # within 2 s of the write: the file is hashed again, nothing is saved
        assert saves == []
        api._indexes.clear()  # a new process: the index file on disk is up to date too
        assert api.search(cfg, "node18")[0].entry.id == new.id
    assert saves == []


def _store_one(cfg, text):
    api.store(cfg, "fact", text)


def test_another_process_store_updates_the_index_file_and_this_process_reloads_it(cfg, monkeypatch):
    api.store(cfg, "fact", "first entry about caches")
    api.search(cfg, "caches")
    ctx = multiprocessing.get_context("spawn")
    child = ctx.Process(target=_store_one, args=(cfg, "second entry about websocket reconnects"))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    _no_parsing(monkeypatch)  # the child saved the index with its change: reloaded, not re-parsed
    assert api.search(cfg, "websocket")[0].entry.text == "second entry about websocket reconnects"


def test_hand_edit_after_a_store_is_still_seen(cfg):
    api.store(cfg, "fact", "first entry")
    api.search(cfg, "first")
    path = cfg.project_home / "MEMORY.md"
    path.write_text(path.read_text() + "- hand written entry about postgres\n")
    assert api.search(cfg, "postgres")[0].entry.text == "hand written entry about postgres"


def test_an_index_written_by_an_older_version_is_rebuilt_without_a_warning(cfg):
    api.store(cfg, "fact", "survives an upgrade")
    api.search(cfg, "upgrade")
    index_file = cfg.project_home / ".index" / "index.bin"
    index_file.write_bytes(b"CTXMIDX2" + index_file.read_bytes()[8:])
    api._indexes.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert api.search(cfg, "upgrade")[0].entry.text == "survives an upgrade"
    assert index_file.read_bytes().startswith(MAGIC)
