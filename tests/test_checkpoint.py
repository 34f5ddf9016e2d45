"""Checkpoint extraction and writing, and dream consolidation."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccr.expand import expand
from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.formats.sessions.transcript import Transcript
from memory import api
from memory.checkpoint import SECTIONS, CheckpointConfig, write_checkpoint
from memory.config import MemoryConfig
from memory.dream import DreamRefused, dream


def _cfg(tmp_path: Path) -> CheckpointConfig:
    home = tmp_path / ".ctxmill"
    return CheckpointConfig(MemoryConfig(home, tmp_path / "global"), home / "ccr")


def _use(i, name, inp):
    return {"type": "tool_use", "id": f"t{i}", "name": name, "input": inp}


def _result(i, text, err=False):
    return {"type": "tool_result", "tool_use_id": f"t{i}", "content": text, "is_error": err}


def _session() -> Transcript:
    long_error = "Traceback (most recent call last):\n" + "  frame\n" * 80 + "ModuleNotFoundError: No module named 'foo'"
    msgs = [
        {"role": "user", "content": "Add a login page. We must not store passwords in plain text. "
                                    "下一步先写测试。我们决定改用 bcrypt 而不是 md5。"},
        {"role": "assistant", "content": [{"type": "text", "text": "We decided to use Flask-Login instead of a custom session."},
                                          _use(1, "Bash", {"command": "pytest -q"})]},
        {"role": "user", "content": [_result(1, long_error, True)]},
        {"role": "assistant", "content": [_use(2, "Edit", {"file_path": "/p/app.py", "old_string": "a", "new_string": "b"})]},
        {"role": "user", "content": [_result(2, "ok")]},
        {"role": "assistant", "content": [_use(3, "Write", {"file_path": "/p/login.html", "content": "x"}),
                                          _use(4, "Bash", {"command": "mv /p/old.py /p/new.py && rm /p/tmp.txt"})]},
        {"role": "user", "content": [_result(3, "ok"), _result(4, "")]},
        {"role": "assistant", "content": "Done. Next steps: add the logout route. api_key=sk-ant-abcdefghijklmnopqrstuvwxyz123456"},
    ]
    return Transcript(format="test", provider="anthropic", messages=msgs)


def test_checkpoint_sections_files_gotchas_and_ccr(tmp_path):
    cfg = _cfg(tmp_path)
    result = write_checkpoint(cfg, _session(), "s1")
    md = result.markdown
    assert [line[3:] for line in md.splitlines() if line.startswith("## ")] == list(SECTIONS)
    files = md.split("## Files changed")[1].split("## ")[0]
    for path in ("/p/app.py", "/p/login.html", "/p/old.py", "/p/new.py", "/p/tmp.txt"):
        assert f"`{path}`" in files
    errors = md.split("## Errors → fixes")[1].split("## ")[0]
    assert "No module named 'foo'" in errors and "Edit /p/app.py" in errors
    assert "Flask-Login" in md.split("## Decisions")[1].split("## ")[0]
    assert "bcrypt" in md.split("## Decisions")[1].split("## ")[0]
    assert "plain text" in md.split("## Constraints")[1].split("## ")[0]
    assert "logout route" in md.split("## Next steps")[1].split("## ")[0]
    keys = [m.key for m in find_markers(md)]
    assert keys and set(keys) <= set(result.ccr_keys)
    with CCRStore(cfg.ccr_dir) as store:
        assert any("ModuleNotFoundError" in (expand(store, k).text or "") for k in keys)
    home = cfg.memory.project_home
    assert (home / "checkpoint.md").read_text() == md == (home / "sessions/s1/checkpoint.md").read_text()
    raw = (home / "sessions/s1/checkpoint.raw.json").read_text()
    assert "sk-ant-abcdefghij" not in raw and "[REDACTED" in raw
    assert orjson.loads(raw)["messages"][0]["role"] == "user"


def test_offers_to_notes_once_and_skips_what_memory_holds(tmp_path):
    cfg = _cfg(tmp_path)
    api.store(cfg.memory, "decision", "We decided to use Flask-Login instead of a custom session")
    first = write_checkpoint(cfg, _session(), "s1")
    assert first.offered and all(e.file.endswith("notes.md") for e in first.offered)
    assert not any("Flask-Login" in e.text for e in first.offered)
    assert {e.type for e in first.offered} >= {"constraint", "gotcha"}
    assert write_checkpoint(cfg, _session(), "s1").offered == []


def _mem(tmp_path) -> MemoryConfig:
    return MemoryConfig(tmp_path / "p", tmp_path / "g")


def test_dream_merges_keeps_newest_wording_drops_superseded_and_keeps_pinned(tmp_path):
    cfg = _mem(tmp_path)
    api.store(cfg, "fact", "The corpus lives in the shared corpus folder")
    api.store(cfg, "decision", "Store CCR originals in SQLite for the cache")
    pinned = api.store(cfg, "constraint", "Engines never import the ctxmill package", pin=True)
    api.store(cfg, "constraint", "engines never import the ctxmill package at all", notes=True)
    api.store(cfg, "fact", "the corpus lives in the shared corpus folder, beside the repo", notes=True)
    api.store(cfg, "decision", "Switched to plain files instead of SQLite for CCR originals", notes=True)
    result = dream(cfg)
    texts = [e.text for e in api.list_entries(cfg, "project")]
    assert "the corpus lives in the shared corpus folder, beside the repo" in texts
    assert "The corpus lives in the shared corpus folder" not in texts
    assert "Store CCR originals in SQLite for the cache" not in texts
    assert "Switched to plain files instead of SQLite for CCR originals" in texts
    assert pinned.text in texts and "engines never import the ctxmill package at all" not in texts
    assert result.archive is not None and result.changed
    again = dream(cfg)
    assert not again.changed


def test_dream_refuses_to_shrink_by_more_than_half(tmp_path):
    cfg = _mem(tmp_path)
    for i in range(4):
        api.store(cfg, "note", f"release checklist item run the full test suite before tagging {'x' * i}")
    before = (cfg.project_home / "MEMORY.md").read_text()
    with pytest.raises(DreamRefused):
        dream(cfg)
    assert (cfg.project_home / "MEMORY.md").read_text() == before


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["fact", "decision", "gotcha"]),
                          st.lists(st.sampled_from("alpha beta gamma delta sqlite bm25 jieba cache".split()),
                                   min_size=1, max_size=5), st.booleans()), max_size=12))
def test_dream_is_deterministic_and_idempotent(tmp_path_factory, items):
    outputs = []
    for _ in range(2):
        cfg = _mem(tmp_path_factory.mktemp("d"))
        for kind, words, to_notes in items:
            api.store(cfg, kind, " ".join(words), notes=to_notes)
        texts = sorted(e.text for e in api.list_entries(cfg, "project"))
        try:
            dream(cfg)
        except DreamRefused:
            continue
        assert not dream(cfg).changed
        after = sorted(e.text for e in api.list_entries(cfg, "project"))
        assert set(after) <= set(texts)
        outputs.append(after)
    assert len(outputs) < 2 or outputs[0] == outputs[1]
