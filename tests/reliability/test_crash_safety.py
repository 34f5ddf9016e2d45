"""Kill tests, concurrent writers, and full / read-only disks (see crashkit.py for the harness;
bench/crash.py runs the same with larger budgets)."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from ccr.store import CCRError, CCRStore
from compress.runner.pipeline import run
from compress.state.session import STATE_FILE, VERSION, Session
from memory import api
from tests.chain_checks import OPEN_CONFIG, anthropic_body
from tests.reliability.crashkit import kill_loop, memory_config, run_concurrently, session_body
from tests.reliability.tally import record

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("kind", "iterations"), [("memory", 100), ("ccr", 60), ("session", 100)])
def test_sigkill_at_random_points_loses_nothing_committed(tmp_path, kind, iterations):
    outcome = kill_loop(kind, tmp_path, iterations, max_delay=0.05, seed=7)
    record("kills", f"SIGKILL of a {kind} writer at a random point", iterations, lost=len(outcome.failures))
    assert outcome.failures == []
    assert outcome.committed >= iterations  # every kill came after a commit, while the writer worked


def test_eight_processes_at_once_lose_and_duplicate_nothing(tmp_path):
    outcome = run_concurrently(tmp_path, workers=8, rounds=15)
    record("concurrent writers", "8 processes storing memory and CCR batches", outcome.committed,
           lost=len(outcome.failures))
    assert outcome.failures == []
    assert outcome.committed == 8 * 15 * 2  # each round commits one memory change and one CCR batch


# -- full disk, read-only folder, permission denied ---------------------------------------------

def failing(error: int):
    def replace(*_args, **_kwargs):
        raise OSError(error, os.strerror(error))
    return replace


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_memory_write_failure_leaves_the_file_and_folder_as_they_were(tmp_path, monkeypatch, error):
    cfg = memory_config(tmp_path)
    kept = api.store(cfg, "fact", "the first entry stays")
    before = (cfg.project_home / api.MEMORY_FILE).read_bytes()
    monkeypatch.setattr(os, "replace", failing(error))
    with pytest.raises(OSError):
        api.store(cfg, "fact", "this one cannot be written")
    with pytest.raises(OSError):
        api.forget(cfg, kept.id)
    monkeypatch.undo()
    changed = (cfg.project_home / api.MEMORY_FILE).read_bytes() != before
    left_behind = sorted(p.name for p in cfg.project_home.iterdir() if p.name.endswith(".tmp"))
    record("disk failures", "memory store and forget when the disk is full, read-only or denied", 2,
           lost=changed + len(left_behind))
    assert not changed and left_behind == []


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EROFS])
def test_session_save_failure_keeps_the_old_state(tmp_path, monkeypatch, error):
    store = CCRStore.in_memory()
    with Session.open(tmp_path) as session:
        run(session_body(3), session=session, store=store)
    before = (tmp_path / STATE_FILE).read_bytes()
    monkeypatch.setattr(os, "replace", failing(error))
    edited = session_body(3)
    edited["messages"][0] = {"role": "user", "content": "a different start"}
    with pytest.raises(OSError), Session.open(tmp_path) as session:
        run(edited, session=session, store=store)  # history changed: an epoch rewrites the file
    monkeypatch.undo()
    kept = (tmp_path / STATE_FILE).read_bytes() == before and bool(Session.load(tmp_path).records)
    record("disk failures", "session state saved when the disk is full or read-only", 1, lost=not kept)
    assert kept


def test_ccr_commit_failure_passes_the_request_through_unchanged(tmp_path):
    class FullDisk(CCRStore):
        def _write(self, items):
            raise CCRError("CCR commit of 1 entries failed: database or disk is full")

    call = ("Bash", {"command": "pytest"}, "PASSED\n" * 200)
    body = anthropic_body([call, call])
    session = Session.memory()
    result = run(body, session=session, store=FullDisk(tmp_path), config=OPEN_CONFIG)
    record("disk failures", "a request whose CCR commit fails (disk full)", 1, lost=result.body is not body)
    assert result.body is body and "disk is full" in result.report.error
    assert session.records == {}  # nothing recorded for output that was never sent


def limited_cli(tmp_path: Path, max_file_bytes: int, *args: str) -> subprocess.CompletedProcess:
    """Run the CLI with a file size limit (a full disk as far as the process can tell)."""
    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(tmp_path / "home"),
           "XDG_DATA_HOME": str(tmp_path / "xdg")}
    return subprocess.run([sys.executable, "-m", "ctxmill", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, preexec_fn=limit, timeout=60)


def test_full_disk_at_the_cli_is_one_clear_line_and_nothing_half_written(tmp_path):
    call = ("Bash", {"command": "make"}, "compiling module\n" * 20_000)  # 340 KB original
    request = tmp_path / "request.json"
    request.write_bytes(orjson.dumps(anthropic_body([call, call, call])))
    out = tmp_path / "out.json"
    done = limited_cli(tmp_path, 64 * 1024, "compress", str(request), "-o", str(out),
                       "--session", str(tmp_path / "home" / "s"))
    assert done.returncode in (1, 2), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    state = tmp_path / "home" / "s" / STATE_FILE
    half_written = out.exists() + (state.exists() and Session.load(state.parent).header.version != VERSION)

    stored = limited_cli(tmp_path, 0, "memory", "store", "--type", "fact", "cannot be written")
    half_written += (tmp_path / "home" / api.MEMORY_FILE).exists()
    record("disk failures", "CLI compress and memory store past the file size limit", 2, lost=half_written)
    assert half_written == 0
    assert stored.returncode == 2 and len(stored.stderr.strip().splitlines()) == 1, stored.stderr
    assert "Traceback" not in stored.stderr


@pytest.fixture
def read_only_home(tmp_path):
    """A tmpfs mounted read-only holding an existing project home (skips where mounting is not allowed)."""
    mount = tmp_path / "ro"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)")
    try:
        api.store(memory_config(mount), "fact", "written before the disk went read-only")
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True, capture_output=True)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_read_only_home_is_one_clear_line_and_reads_still_work(tmp_path, read_only_home):
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(read_only_home / "project"),
           "XDG_DATA_HOME": str(read_only_home / "global")}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "ctxmill", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=60)

    done = cli("memory", "store", "--type", "fact", "cannot be written")
    assert done.returncode == 2 and "Read-only file system" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    listed = cli("memory", "list")
    assert listed.returncode == 0 and "written before the disk went read-only" in listed.stdout
    request = tmp_path / "request.json"
    call = ("Bash", {"command": "make"}, "compiling\n" * 500)
    request.write_bytes(orjson.dumps(anthropic_body([call, call])))
    done = cli("compress", str(request), "-o", str(tmp_path / "out.json"))
    assert done.returncode == 2 and "cannot open the CCR store" in done.stderr and "Traceback" not in done.stderr
