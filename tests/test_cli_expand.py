"""`ctxmill expand` as a user runs it: a subprocess with the repository on PYTHONPATH."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ccr.keys import make_key
from ccr.store import CCRStore

REPO = Path(__file__).resolve().parents[1]
ORIGINAL = "def f():\n    return 'π'\n\nprint(f())\n"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("CTXMILL_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "ctxmill", "expand", *args], capture_output=True, env=env, cwd=cwd, timeout=60
    )


@pytest.fixture
def home(tmp_path):
    home = tmp_path / ".ctxmill"
    with CCRStore(home / "ccr") as store:
        store.put(ORIGINAL, hint="re-run the tool call `cat f.py`")
    return home


def test_prints_the_exact_original(home):
    done = run(make_key(ORIGINAL), "--home", str(home))
    assert (done.returncode, done.stdout.decode("utf-8"), done.stderr) == (0, ORIGINAL, b"")


def test_lines_and_grep(home):
    assert run(make_key(ORIGINAL), "--home", str(home), "--lines", "2:3").stdout.decode() == "2\t    return 'π'\n3\t\n"
    assert run(make_key(ORIGINAL), "--home", str(home), "--grep", "print").stdout.decode() == "4\tprint(f())\n"


def test_unknown_key_exits_1_with_one_line(home):
    done = run(make_key("other"), "--home", str(home))
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.decode().count("\n") == 1 and "is not in this store" in done.stderr.decode()


def test_expired_key_says_what_to_rerun(tmp_path):
    home = tmp_path / ".ctxmill"
    with CCRStore(home / "ccr", clock=lambda: time.time() - 2 * 86400) as store:
        key = store.put("old output", hint="re-run the tool call `pytest -q`")
    done = run(key, "--home", str(home))
    assert done.returncode == 1
    assert done.stderr.decode().strip() == (
        f'ctxmill: deep_expand("{key}") has expired (stored 48 h ago, kept 24 h); '
        "re-run the tool call `pytest -q` to see it again"
    )


@pytest.mark.parametrize("bad", ["../../etc/passwd", make_key("x").upper(), make_key("x")[:31]])
def test_invalid_key_exits_2(home, bad):
    done = run("--home", str(home), "--", bad)
    assert done.returncode == 2 and "is not a CCR key" in done.stderr.decode()


def test_bad_line_range_exits_2(home):
    done = run(make_key(ORIGINAL), "--home", str(home), "--lines", "9:")
    assert done.returncode == 2 and "starts after the last line" in done.stderr.decode()


def test_missing_store_is_reported_and_not_created(tmp_path):
    done = run(make_key("x"), "--home", str(tmp_path / "nowhere"))
    assert done.returncode == 1 and done.stderr.decode().count("\n") == 1  # not in the user's store either
    assert not (tmp_path / "nowhere").exists()
