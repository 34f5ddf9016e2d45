"""The memory injected at session start stays within its budget: pinned entries always, then the
entries found useful most often and most recently; the rest stay searchable; doctor says how full."""

from __future__ import annotations

import shutil
from datetime import date, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_helpers import JIEBA_CACHE

from ctxmill.commands.doctor import memory_fullness
from ctxmill.errors import ConfigError
from ctxmill.hooks import handle
from ctxmill.settings import Settings
from memory import api, usage
from memory.config import MemoryConfig
from memory.inject import line, select

TODAY = date(2030, 6, 1)


def _fill(cfg: MemoryConfig, n: int) -> list:
    return [api.store(cfg, "fact", f"The service number {i} listens on port {8000 + i} in staging.") for i in range(n)]


def test_a_small_memory_is_injected_whole_and_notes_are_not(cfg):
    entries = _fill(cfg, 3)
    api.store(cfg, "note", "A checkpoint note not yet consolidated.", notes=True)
    got = select(cfg, TODAY)
    assert got.lines == tuple(line(e) for e in entries) and got.left_out == 0


def test_past_the_budget_pinned_stay_the_most_useful_come_next_and_the_rest_stay_searchable(cfg):
    entries = _fill(cfg, 40)
    pinned = api.store(cfg, "constraint", "Never deploy on Fridays.", pin=True)
    usage.record(cfg, [entries[30].id], (TODAY - timedelta(days=1)).isoformat())
    for _ in range(3):
        usage.record(cfg, [entries[20].id], (TODAY - timedelta(days=2)).isoformat())
    usage.record(cfg, [entries[10].id], (TODAY - timedelta(days=200)).isoformat())
    small = cfg.replace(inject_chars=4 * len(line(entries[0])))
    got = select(small, TODAY)
    assert got.lines[:3] == (line(pinned), line(entries[20]), line(entries[30]))
    assert got.chars <= small.inject_chars and got.left_out > 30
    assert line(entries[10]) in got.lines  # used once, long ago: still ahead of the never used
    left = next(e for e in entries if line(e) not in got.lines)
    assert api.search(small, left.text)[0].entry.id == left.id


def test_pinned_entries_are_injected_even_past_the_budget(cfg):
    pins = [api.store(cfg, "decision", f"Pinned decision number {i} about the release train.", pin=True)
            for i in range(5)]
    _fill(cfg, 5)
    got = select(cfg.replace(inject_chars=10), TODAY)
    assert got.lines == tuple(line(p) for p in pins)
    name, problem = memory_fullness(got)
    assert "5 of 10 entries (5 pinned)" in name and "pinned entries alone take" in problem


def test_doctor_says_how_full_the_budget_is(cfg):
    _fill(cfg, 40)
    name, problem = memory_fullness(select(cfg.replace(inject_chars=1000), TODAY))
    assert problem is None and "of 40 entries (0 pinned)" in name and "of 1,000 chars" in name
    assert "searchable only" in name


def test_session_start_injects_within_the_budget_and_prompt_hits_count_as_uses(tmp_path, monkeypatch):
    home = tmp_path / ".ctxmill"
    monkeypatch.setenv("CTXMILL_HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    home.mkdir()
    (home / "config.toml").write_text("[memory]\ninject_chars = 600\n")
    cfg = Settings.load(home).memory
    assert cfg.inject_chars == 600
    entries = _fill(cfg, 30)
    event = {"session_id": "s", "cwd": str(tmp_path), "transcript_path": str(tmp_path / "t.jsonl")}
    first = handle("SessionStart", {**event, "hook_event_name": "SessionStart"})["hookSpecificOutput"]["additionalContext"]
    assert "more entries: memory_search finds them" in first
    target = entries[25]
    assert line(target) not in first
    for _ in range(2):
        handle("UserPromptSubmit", {**event, "hook_event_name": "UserPromptSubmit",
                                    "prompt": "which port does service number 25 listen on in staging"})
    assert usage.load(cfg)[target.id].times == 2
    after = handle("SessionStart", {**event, "hook_event_name": "SessionStart"})["hookSpecificOutput"]["additionalContext"]
    assert line(target) in after


@pytest.mark.parametrize("value", ["-1", "1.5", '"big"'])
def test_a_bad_budget_is_a_config_error(tmp_path, value):
    (tmp_path / "config.toml").write_text(f"[memory]\ninject_chars = {value}\n")
    with pytest.raises(ConfigError, match="inject_chars"):
        Settings.load(tmp_path).memory


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 99), st.booleans(), st.integers(0, 3), st.integers(0, 90)), max_size=15),
       st.integers(0, 800))
def test_pinned_never_dropped_budget_kept_and_the_same_state_gives_the_same_lines(tmp_path, items, budget):
    root = tmp_path / "p"
    shutil.rmtree(root, ignore_errors=True)
    cfg = MemoryConfig(project_home=root / ".ctxmill", global_home=root / "g", cache_dir=JIEBA_CACHE,
                       inject_chars=budget)
    stored = []
    for n, pin, uses, age in items:
        entry = api.store(cfg, "fact", f"Fact {n}: the cache {n} expires after {n + 1} hours.", pin=pin)
        stored.append(entry)
        for _ in range(uses):
            usage.record(cfg, [entry.id], (TODAY - timedelta(days=age)).isoformat())
    got = select(cfg, TODAY)
    pinned = [line(e) for e in dict((e.id, e) for e in stored).values() if e.pinned]
    assert list(got.lines[: got.pinned]) == pinned
    assert got.chars - sum(len(x) + 1 for x in pinned) <= max(budget - sum(len(x) + 1 for x in pinned), 0)
    assert select(cfg, TODAY) == got


def test_a_use_that_cannot_be_written_never_fails_the_search_that_counts_it(cfg):
    entry = _fill(cfg, 1)[0]
    api.search(cfg, "service port")
    index = api.index_path(cfg).parent
    shutil.rmtree(index)
    index.write_text("not a folder")  # nothing can be written below it
    usage.record(cfg, [entry.id], TODAY.isoformat())
    assert usage.load(cfg) == {}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.lists(st.sampled_from(["m-1", "m-2", "m-3", "m-4"]), min_size=1, max_size=3),
                          st.integers(0, 40)), max_size=40), st.integers(30, 400))
def test_uses_add_up_the_same_whether_or_not_the_log_was_compacted(tmp_path, monkeypatch, records, limit):
    root = tmp_path / "u"
    shutil.rmtree(root, ignore_errors=True)
    cfg = MemoryConfig(project_home=root / ".ctxmill", global_home=root / "g", cache_dir=JIEBA_CACHE)
    expected: dict = {}
    monkeypatch.setattr(usage, "COMPACT_BYTES", limit)
    for ids, age in records:
        day = (TODAY - timedelta(days=age)).isoformat()
        usage.record(cfg, ids, day)
        for entry_id in dict.fromkeys(ids):
            count, last = expected.get(entry_id, (0, day))
            expected[entry_id] = (count + 1, max(last, day))
    assert {k: (v.times, v.last) for k, v in usage.load(cfg).items()} == expected


def test_the_usage_log_is_not_written_through_a_link(cfg, tmp_path):
    entry = _fill(cfg, 1)[0]
    api.search(cfg, "service port")
    target = tmp_path / "elsewhere.txt"
    target.write_text("mine\n")
    log = api.index_path(cfg).with_name(usage.USAGE_FILE)
    log.symlink_to(target)
    usage.record(cfg, [entry.id], TODAY.isoformat())
    assert target.read_text() == "mine\n"
