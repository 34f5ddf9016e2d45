"""dream merges only entries that say the same thing and loses nothing: every removed or merged
entry is archived with its reason and can be restored, alone or with the whole run."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory import api
from memory.dream import DreamRefused, dream
from memory.dream_archive import REMOVED_FILE, NothingToRestore, restore, runs
from memory.markdown import parse


@pytest.fixture(autouse=True)
def fresh_process_cache():
    api._indexes.clear()
    yield
    api._indexes.clear()


def texts(cfg) -> list[str]:
    return [e.text for e in api.list_entries(cfg, "project")]


@pytest.mark.parametrize("to_notes", [True, False])
def test_facts_that_differ_in_numbers_all_survive(cfg, to_notes):
    facts = [f"The retry limit for queue worker {k} is {3 * k} attempts" for k in range(1, 7)]
    for text in facts:
        api.store(cfg, "fact", text, notes=to_notes)
    dream(cfg)
    assert sorted(texts(cfg)) == sorted(facts)


def test_facts_that_differ_in_a_name_or_path_both_survive(cfg):
    api.store(cfg, "decision", "Deploy the API service with Kubernetes on the staging cluster")
    api.store(cfg, "decision", "Deploy the API service with Nomad on the staging cluster", notes=True)
    api.store(cfg, "gotcha", "Edit src/app.py before running the migration script")
    api.store(cfg, "gotcha", "Edit src/main.py before running the migration script", notes=True)
    dream(cfg)
    assert len(texts(cfg)) == 4


def test_the_same_fact_reworded_still_merges_into_the_newest_wording(cfg):
    api.store(cfg, "fact", "The retry limit for queue worker 2 is 6 attempts")
    api.store(cfg, "fact", "the retry limit for the queue worker 2 is 6 attempts now", notes=True)
    result = dream(cfg)
    assert texts(cfg) == ["the retry limit for the queue worker 2 is 6 attempts now"] and result.merged == 1


def test_an_undated_hand_written_entry_wins_over_older_dated_wording(cfg):
    home = cfg.project_home
    home.mkdir(parents=True)
    (home / "MEMORY.md").write_text("# Memory\n\n## Facts\n\n- Use uv to install the dependencies of the project\n")
    (home / "notes.md").write_text("## Facts\n\n- use uv to install dependencies of the project <!-- m-0badc0de 2020-01-01 -->\n")
    dream(cfg)
    assert texts(cfg) == ["Use uv to install the dependencies of the project"]


def test_a_newer_distinct_note_is_not_dropped_for_a_pinned_entry(cfg):
    pinned = api.store(cfg, "constraint", "The API timeout is 30 seconds for every upstream call", pin=True)
    api.store(cfg, "constraint", "The API timeout is 60 seconds for every upstream call", notes=True)
    api.store(cfg, "constraint", "the API timeout is 30 seconds for every upstream call", notes=True)
    dream(cfg)
    assert sorted(texts(cfg)) == sorted([pinned.text, "The API timeout is 60 seconds for every upstream call"])


def test_every_removed_entry_is_archived_with_its_reason_and_each_run_keeps_its_own_archive(cfg):
    old = api.store(cfg, "decision", "Store CCR originals in SQLite for the cache")
    dup = api.store(cfg, "fact", "The corpus lives in the shared corpus folder")
    api.store(cfg, "fact", "the corpus lives in the shared corpus folder beside it", notes=True)
    api.store(cfg, "decision", "Switched to plain files instead of SQLite for CCR originals", notes=True)
    first = dream(cfg)
    removed = (first.archive / REMOVED_FILE).read_text()
    assert f"- {old.id}: superseded by m-" in removed and f"- {dup.id}: merged into m-" in removed
    archived = {e.id: e for e in parse(removed).entries()}
    assert archived[old.id].text == old.text and archived[dup.id].text == dup.text
    api.store(cfg, "note", "a note for the second run", notes=True)
    second = dream(cfg)
    assert second.archive != first.archive and [r.name for r in runs(cfg)] == [first.archive.name, second.archive.name]
    assert (first.archive / REMOVED_FILE).read_text() == removed


def test_restore_an_entry_and_a_whole_run(cfg):
    old = api.store(cfg, "decision", "Store CCR originals in SQLite for the cache")
    api.store(cfg, "decision", "Switched to plain files instead of SQLite for CCR originals", notes=True)
    before = (cfg.project_home / "MEMORY.md").read_bytes(), (cfg.project_home / "notes.md").read_bytes()
    run = dream(cfg).archive
    assert old.text not in texts(cfg)
    assert restore(cfg, old.id).startswith(f"restored {old.id}")
    assert old.text in texts(cfg) and "in memory already" in restore(cfg, old.id)
    restore(cfg, run.name)
    assert ((cfg.project_home / "MEMORY.md").read_bytes(), (cfg.project_home / "notes.md").read_bytes()) == before
    assert len(runs(cfg)) == 2  # the files the restore replaced were archived first
    with pytest.raises(NothingToRestore):
        restore(cfg, "m-00000000")


entries = st.lists(st.tuples(st.sampled_from(["fact", "decision", "gotcha"]),
                             st.lists(st.sampled_from("alpha beta gamma sqlite bm25 cache 3 7 src/a.py Redis instead of".split()),
                                      min_size=2, max_size=7), st.booleans()), max_size=14)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries)
def test_nothing_is_lost_every_entry_is_in_memory_or_in_an_archive(tmp_path_factory, items):
    from memory.config import MemoryConfig
    from tests.memory.conftest import JIEBA_CACHE

    root = tmp_path_factory.mktemp("d")
    cfg = MemoryConfig(project_home=root / ".ctxmill", global_home=root / "g", cache_dir=JIEBA_CACHE)
    stored = {api.store(cfg, kind, " ".join(words), notes=notes).id for kind, words, notes in items}
    try:
        result = dream(cfg)
    except DreamRefused:
        return
    kept = {e.id for e in api.list_entries(cfg, "project")}
    archived = {e.id for run in runs(cfg) for e in parse((run / REMOVED_FILE).read_text()).entries()}
    assert stored <= kept | archived
    assert len(kept) == len(stored) - (result.merged + result.superseded + result.left_out)
