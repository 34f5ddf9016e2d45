"""`ctxmill compress` / `ctxmill expand` as a user runs them (subprocess)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ccr.markers import find_markers
from compress.state.session import Session
from tests.conftest import REPO
from tests.helpers import markers_in, strings

EXAMPLE = REPO / "fixtures" / "example-request.json"


def ctxmill(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(cwd / ".ctxmill")}
    return subprocess.run([sys.executable, "-m", "ctxmill", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, timeout=120)


def test_compress_example_then_expand_a_marker(tmp_path):
    out = tmp_path / "out.json"
    done = ctxmill("compress", str(EXAMPLE), "-o", str(out), "--session", str(tmp_path / "sess"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = done.stderr.decode()
    assert summary.startswith("ctxmill: ") and "→" in summary and "tier" in summary and "CCR entries" in summary
    original = json.loads(EXAMPLE.read_text())
    compressed = json.loads(out.read_text())
    assert set(compressed) == set(original)
    assert len(compressed["messages"]) == len(original["messages"])
    markers = markers_in(compressed)
    assert markers, "the example should compress something"
    originals = set(strings(original))
    def expand(key: str) -> str:
        shown = ctxmill("expand", key, cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        return shown.stdout.decode()

    for marker in markers:
        text = expand(marker.key)
        # the exact original, or (a block cut after its injected reminder was removed) a text whose
        # own markers lead to the exact original
        assert text in originals or any(expand(inner.key) in originals for inner in find_markers(text))


def test_json_report_and_stdin(tmp_path):
    done = ctxmill("compress", "-", "--json", cwd=tmp_path, stdin=EXAMPLE.read_bytes())
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stderr)
    assert report["tokens_before"] >= report["tokens_after"] > 0
    assert report["provider"] == "anthropic" and report["mode"] == "epoch"
    assert json.loads(done.stdout)["model"] == "claude-sonnet-4-5"


def test_same_session_twice_gives_identical_bytes(tmp_path):
    outs = []
    for name in ("a.json", "b.json"):
        done = ctxmill("compress", str(EXAMPLE), "-o", str(tmp_path / name), "--session", "s", cwd=tmp_path)
        assert done.returncode == 0
        outs.append((tmp_path / name).read_bytes())
    assert outs[0] == outs[1]


@pytest.mark.parametrize("content, message", [
    (b"{not json", "not valid JSON"),
    (b'{"messages": "x"}', "`messages` must be a list"),
    (b'\xff\xfe{"messages": []}', "not valid UTF-8"),
    (b'{"messages": [{"role": "user", "content": ' + b"[" * 10_000 + b"]" * 10_000 + b"}]}", "nested too deeply"),
], ids=["syntax", "messages-not-list", "invalid-utf8", "nested-10000-deep"])
def test_unusable_input_is_one_clear_line(tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    done = ctxmill("compress", str(bad), cwd=tmp_path)
    assert done.returncode == 2
    err = done.stderr.decode()
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_missing_file(tmp_path):
    done = ctxmill("compress", str(tmp_path / "nope.json"), cwd=tmp_path)
    assert done.returncode == 2 and "cannot read" in done.stderr.decode()


def _reads_with_a_long_note(turns: int, big: int) -> dict:
    """Reads of text files, one of them big; after the big one a long note the provider would
    have to write again if the read were cut while its cache lives."""
    messages = [{"role": "user", "content": "start"}]
    for i in range(turns):
        output = "\n".join(f"line {j} of step {i}" for j in range(2_000 if i == big else 3))
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read",
                                                        "input": {"file_path": f"/src/step{i}.txt"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": output},
                                                  *([{"type": "text", "text": "Keep going. " * 3_000}] if i == big + 1 else [])]}]
    return {"model": "claude-sonnet-4-5", "system": "s", "messages": messages}


def test_at_says_when_a_replayed_request_was_sent(tmp_path):
    """A replayed session passes each request's recorded time: a request an hour after the last
    one finds the provider's cache gone and re-decides the old big read for free; the same
    request a minute later keeps it whole (cutting it would make the provider write the long
    note again). The time is kept in the session."""
    body = _reads_with_a_long_note(8, big=1)
    start = 1_795_770_000.0
    session = tmp_path / "sess"
    (tmp_path / ".ctxmill").mkdir()  # the big read no later message shows is cut by age (shipped: kept below high)
    (tmp_path / ".ctxmill" / "config.toml").write_text('[compress.stages.trim_outputs]\nunshown_tier = "always"\n')
    for k in range(3, len(body["messages"]), 2):
        request = tmp_path / f"r{k}.json"
        request.write_text(json.dumps({**body, "messages": body["messages"][:k]}))
        done = ctxmill("compress", str(request), "-o", str(tmp_path / "out.json"), "--session", str(session),
                       "--at", str(start + k), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    last = tmp_path / "last.json"
    last.write_text(json.dumps(body))
    reports = {}
    for label, at, sent in (("a minute", "2026-11-27T09:01:15Z", start + 75), ("an hour", "2026-11-27T10:00:15Z", start + 3_615)):
        copy = tmp_path / label
        shutil.copytree(session, copy)
        done = ctxmill("compress", str(last), "-o", str(tmp_path / "out.json"), "--session", str(copy), "--json",
                       "--at", at, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        reports[label] = (json.loads(done.stderr), (tmp_path / "out.json").read_text())
        assert Session.load(copy).header.last_request_at == sent
    assert reports["a minute"][0]["mode"] == "incremental" and "line 1000 of step 1" in reports["a minute"][1]
    assert reports["an hour"][0]["mode"] == "epoch" and "line 1000 of step 1" not in reports["an hour"][1]


def test_at_refuses_what_is_not_a_time(tmp_path):
    done = ctxmill("compress", str(EXAMPLE), "--at", "yesterday", cwd=tmp_path)
    assert done.returncode == 2 and "not a time: 'yesterday'" in done.stderr.decode()
