"""Dream keeps decisions nothing replaced, folds in only complete statements about this project,
shows a run before it happens (dry run), and moves its schedule on even when a run gives up."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memory_helpers import REPO

from memory import api
from memory import dream as dream_module
from memory.dream import DreamGaveUp, dream, due, maybe_dream
from memory.dream_archive import REMOVED_FILE, runs
from memory.statements import flaw

KEPT_PAIRS = [  # (older decision, newer decision that does not replace it)
    ("Use PostgreSQL for the billing service database",
     "The billing service database migrations moved to the ops repo"),
    ("Use PostgreSQL for the billing service database",
     "Use MySQL instead of PostgreSQL for the analytics service reports"),
    ("Use PostgreSQL for the billing service database",
     "The billing service no longer writes to the audit log database"),
    ("Deploy the billing service with Helm charts",
     "Switched the billing service dashboards to Grafana"),
]
REPLACED_PAIRS = [
    ("Use PostgreSQL for the billing service database",
     "Switched the billing service database from PostgreSQL to MySQL"),
    ("Use requests for HTTP calls in the sync client",
     "Use httpx instead of requests for HTTP calls in the sync client"),
    ("使用 PostgreSQL 作为计费服务的数据库", "计费服务的数据库不再使用 PostgreSQL，改用 MySQL"),
]


def _texts(cfg) -> list[str]:
    return [e.text for e in api.list_entries(cfg, "project")]


@pytest.mark.parametrize("older,newer", KEPT_PAIRS)
def test_a_decision_is_kept_when_the_newer_one_is_about_another_choice(cfg, older, newer):
    api.store(cfg, "decision", older)
    api.store(cfg, "decision", newer, notes=True)
    result = dream(cfg)
    assert older in _texts(cfg) and newer in _texts(cfg) and result.superseded == 0


@pytest.mark.parametrize("older,newer", REPLACED_PAIRS)
def test_a_decision_goes_when_a_newer_one_replaces_the_same_choice(cfg, older, newer):
    api.store(cfg, "decision", older)
    api.store(cfg, "decision", newer, notes=True)
    result = dream(cfg)
    assert older not in _texts(cfg) and newer in _texts(cfg) and result.superseded == 1


LEFTOVERS = {
    "note": ["Let me check the config loader first.", "Now I'll run the whole test suite again.",
             "and then the", "the parser in", "Fixtures live in /Users/someone/work/app/tests/data.json for the tests."],
    "gotcha": ["`bash: jq: command not found` → fixed by sudo apt-get install jq",
               "`ModuleNotFoundError: No module named 'yaml'` → fixed by pip install pyyaml"],
}
KEPT_NOTES = {
    "note": ["The fixtures for the parser tests live in tests/data/.", "计费服务的数据库迁移脚本放在 ops 仓库里"],
    "gotcha": ["`ModuleNotFoundError: No module named 'billing'` → fixed by adding src to pythonpath in pyproject.toml",
               "`pytest: error: unrecognized arguments: --cov` → fixed by using uv run pytest with the dev extra"],
}


def test_only_complete_project_statements_are_folded_in_and_the_rest_is_archived(cfg):
    mine = str(cfg.project_home.parent / "src" / "app.py")
    api.store(cfg, "fact", "Let me note: the build runs on Debian 12.")  # MEMORY.md: a person's entry stays
    for kind, texts in (LEFTOVERS | {}).items():
        for text in texts:
            api.store(cfg, kind, text, notes=True)
    for kind, texts in KEPT_NOTES.items():
        for text in texts:
            api.store(cfg, kind, text, notes=True)
    api.store(cfg, "note", f"The entry point of the service is {mine} and nothing else.", notes=True)
    result = dream(cfg)
    texts = _texts(cfg)
    assert result.left_out == sum(map(len, LEFTOVERS.values()))
    assert all(t in texts for group in KEPT_NOTES.values() for t in group)
    assert not any(t in texts for group in LEFTOVERS.values() for t in group)
    assert "Let me note: the build runs on Debian 12." in texts and any(mine in t for t in texts)
    archived = (runs(cfg)[-1] / REMOVED_FILE).read_text()
    assert all(t in archived for group in LEFTOVERS.values() for t in group) and "left out: narration" in archived


def test_flaw_reasons_name_what_is_wrong(tmp_path):
    assert flaw("Let me check the config loader first.", "note") == "narration"
    assert flaw("and then the", "note").startswith("a fragment")
    assert flaw("The `parse( step is slow in the loader", "note").startswith("a fragment")
    assert flaw("Data in /home/alice/proj/x.csv is stale for the loader.", "fact", tmp_path, tmp_path).startswith(
        "another machine's path")
    assert flaw(f"Data in {tmp_path}/x.csv is stale for the loader.", "fact", tmp_path, None) is None
    assert flaw("The loader retries three times before failing.", "fact") is None
    assert flaw("Now, I will use `curl` to upload the script.", "decision") == "narration"
    assert flaw("This must be append-only.", "constraint").startswith("a fragment (what it speaks of")
    assert flaw("This project must stay on Python 3.11.", "constraint") is None
    assert flaw("I\u2019ve settled the path: extend the schema first.", "decision") == "narration"
    assert flaw("<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error> "
                "→ fixed by Write src/app.py", "gotcha") == "an error of the agent's own tools"
    assert flaw("ModuleNotFoundError: No module named 'yaml' → fixed by pip install pyyaml", "gotcha").startswith(
        "an error any machine gives")
    assert flaw("Fixtures live in E:/work/app/tests for the loader.", "fact", tmp_path, tmp_path).startswith(
        "another machine's path")


def test_dry_run_reports_what_a_run_adds_and_removes_and_writes_nothing(cfg):
    api.store(cfg, "decision", "Use requests for HTTP calls in the sync client")
    api.store(cfg, "decision", "Use httpx instead of requests for HTTP calls in the sync client", notes=True)
    api.store(cfg, "note", "Let me look at the client.", notes=True)
    files = _files(cfg)
    preview = dream(cfg, dry_run=True)
    assert _files(cfg) == files and not runs(cfg) and preview.archive is None
    assert [e.text for e in preview.added] == ["Use httpx instead of requests for HTTP calls in the sync client"]
    assert sorted(why.split(" ")[0] for _, why in preview.removed) == ["left", "superseded"]
    real = dream(cfg)
    assert [e.id for e in real.added] == [e.id for e in preview.added] and real.removed == preview.removed


def test_cli_dry_run_prints_each_addition_and_removal(tmp_path):
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    env.pop("CTXMILL_HOME", None)

    def ctxmill(*args):
        return subprocess.run([sys.executable, "-m", "ctxmill", *args], cwd=project, env=env, capture_output=True,
                              text=True, timeout=60)

    assert ctxmill("memory", "store", "--type", "decision", "Use requests for HTTP calls").returncode == 0
    notes = project / ".ctxmill" / "notes.md"
    notes.write_text("## Decisions\n\n- Use httpx instead of requests for HTTP calls <!-- m-0000aaaa 2030-01-01 -->\n")
    shown = ctxmill("dream", "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert "would change (nothing written)" in shown.stdout
    assert "+ m-0000aaaa [decision] Use httpx instead of requests" in shown.stdout
    assert "[decision] Use requests for HTTP calls  (superseded by m-0000aaaa)" in shown.stdout
    assert notes.exists() and "httpx" in notes.read_text()


def test_the_schedule_moves_on_when_a_run_gives_up_or_is_killed(cfg, monkeypatch):
    cfg.project_home.mkdir(parents=True)
    for i in range(25):
        api.store(cfg, "fact", f"The worker pool {i} drains its queue every {i + 2} minutes.", notes=True)
    start = datetime(2030, 1, 1, tzinfo=UTC)
    assert due(cfg, start)
    with pytest.raises(DreamGaveUp):
        maybe_dream(cfg, start, limit_s=-1.0)  # past its deadline at once
    assert not due(cfg, start + timedelta(hours=1))  # not retried at every session start
    assert due(cfg, start + timedelta(days=2))  # still more than 20 notes: tried again a day later

    def killed(*_args, **_kwargs):
        raise KeyboardInterrupt  # what a hook's timeout does to the process, as far as the files can tell

    later = start + timedelta(days=2)
    monkeypatch.setattr(dream_module, "dream", killed)
    with pytest.raises(KeyboardInterrupt):
        maybe_dream(cfg, later)
    assert not due(cfg, later + timedelta(hours=1))


def test_a_run_that_gives_up_writes_nothing(cfg):
    for i in range(5):
        api.store(cfg, "fact", f"The export job {i} writes {i + 3} files per run.", notes=True)
    before = _files(cfg)
    with pytest.raises(DreamGaveUp):
        dream(cfg, deadline=time.monotonic() - 1)
    assert _files(cfg) == before


def _files(cfg) -> dict:
    """The project home's files and folders, lock files aside."""
    return {p.name: p.read_bytes() if p.is_file() else None for p in cfg.project_home.iterdir()
            if not p.name.endswith(".lock")}


def test_a_checkpoint_offers_no_statement_dream_would_leave_out(tmp_path):
    from memory_helpers import JIEBA_CACHE

    from compress.formats.sessions.transcript import Transcript
    from memory.checkpoint import CheckpointConfig, write_checkpoint
    from memory.config import MemoryConfig

    home = tmp_path / ".ctxmill"
    cfg = CheckpointConfig(MemoryConfig(home, tmp_path / "g", cache_dir=JIEBA_CACHE), home / "ccr")
    said = ("We decided to keep the fixtures in /Users/bob/work/app/data.json for now. "
            "We decided to use Flask-Login for the admin sessions.")
    session = Transcript(format="test", provider="anthropic", messages=[
        {"role": "user", "content": "Add an admin login."}, {"role": "assistant", "content": said}])
    offered = [e.text for e in write_checkpoint(cfg, session, "s1").offered]
    assert any("Flask-Login" in t for t in offered) and not any("/Users/bob" in t for t in offered)


def test_a_replacement_for_another_role_of_the_same_component_keeps_the_older(cfg):
    api.store(cfg, "decision", "Use Redis as the cache for the billing service")
    api.store(cfg, "decision", "Use Kafka instead of Redis as the queue for the billing service", notes=True)
    assert dream(cfg).superseded == 0 and len(_texts(cfg)) == 2


WORDS = "Redis Kafka PostgreSQL cache queue database billing search service worker 12 7".split()
decision = st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
                     st.sampled_from(["", "instead of", "no longer use", "switched from"]),
                     st.lists(st.sampled_from(WORDS), max_size=4), st.sampled_from(["", " as the", " for the"]),
                     st.lists(st.sampled_from(WORDS), max_size=4))


FOUND = [0, 0]  # replacers and twins the examples met: the comparison is not vacuous


@settings(max_examples=150, deadline=None)
@given(st.lists(decision, min_size=1, max_size=12))
def test_the_indexes_find_the_same_twin_and_replacer_as_comparing_every_pair(shapes):
    from memory_helpers import JIEBA_CACHE

    from memory.dream import _Item, _Kept
    from memory.entry import Entry
    from memory.similar import says_as_much, terms
    from memory.statements import Replacement
    from memory.tokenize import Tokenizer

    tok = Tokenizer(JIEBA_CACHE)
    items = []
    for n, (a, phrase, b, joint, c) in enumerate(shapes):
        text = " ".join([*a, phrase, *b]).strip() + joint + (" " + " ".join(c) if c else "")
        replaces = Replacement.of(text, tok.tokens)
        items.append(_Item(Entry(f"m-{n:08x}", "decision", text), False, (n,), terms(text, tok),
                           replaces if replaces.named else None))
    kept = _Kept(items)
    found = FOUND
    for item in items:
        twin = next((k for k in kept.items if says_as_much(k.terms, k.entry.text, item.terms, item.entry.text)), None)
        replacer = next((k for k in kept.items if k.replaces is not None
                         and k.replaces.replaces(k.terms, item.terms)), None)
        assert kept.twin(item) is twin
        assert kept.replacer(item) is replacer
        found[0] += replacer is not None
        found[1] += twin is not None
        kept.add(item)


def test_the_index_comparison_met_replacers_and_twins():
    if FOUND == [0, 0]:
        test_the_indexes_find_the_same_twin_and_replacer_as_comparing_every_pair()
    assert FOUND[0] > 0 and FOUND[1] > 0


@pytest.mark.parametrize("older,newer", [("Don't worry about perfection.", "Don't worry about scale."),
                                         ("Inventory ledger must be append-only.", "This must be append-only."),
                                         ("Need `lazy_html` as a test dependency.", "Need `lazy_html` dependency.")])
def test_a_newer_wording_that_says_less_or_something_else_does_not_absorb_the_older(cfg, older, newer):
    api.store(cfg, "constraint", older)
    api.store(cfg, "constraint", newer, notes=True)
    dream(cfg)
    assert older in _texts(cfg)
