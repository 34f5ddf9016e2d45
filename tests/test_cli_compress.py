"""`ctxmill compress` / `ctxmill expand` as a user runs them (subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ccr.markers import find_markers
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
