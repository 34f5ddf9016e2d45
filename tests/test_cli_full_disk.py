"""`ctxmill compress` on a full disk: one line on stderr, a non-zero exit, and the request still
written (unchanged: nothing could be stored for a marker); logging never prints a traceback."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxmill.logs import _LazyFileHandler
from tests.conftest import REPO

EXAMPLE = REPO / "fixtures" / "example-request.json"


def test_a_log_record_on_a_full_disk_prints_nothing(tmp_path, capsys, monkeypatch):
    handler = _LazyFileHandler(tmp_path / "ctxmill.log", delay=True, encoding="utf-8")
    monkeypatch.setattr(_LazyFileHandler, "_open", lambda self: open("/dev/full", "a", encoding="utf-8"))
    logger = logging.getLogger("ctxmill.test_full_disk")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for _ in range(3):
            logger.warning("compression failed, request passed through")
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert capsys.readouterr().err == ""


@pytest.fixture
def full_disk(tmp_path):
    """A 384 KB tmpfs (root only; skipped where mounting is not allowed), unmounted after."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=384k", "tmpfs", str(mount)],
                                           capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(folder: Path) -> None:
    with open(folder / "filler", "wb", buffering=0) as f:
        try:
            while f.write(b"\0" * 1024):
                pass
        except OSError:
            pass


def _compress(disk: Path, request: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(disk / "project"),
           "XDG_DATA_HOME": str(disk / "data")}
    return subprocess.run([sys.executable, "-m", "ctxmill", "compress", str(request)], cwd=disk, env=env,
                          capture_output=True, timeout=120)


def test_compress_on_a_full_disk_is_one_line_and_writes_the_request(full_disk, tmp_path):
    assert _compress(full_disk, EXAMPLE).returncode == 0  # the stores exist, with room
    body = json.loads(EXAMPLE.read_text())
    for message in body["messages"]:  # new originals, so the next run must write to the full disk
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                block["content"] += "\n(run 2)" + " again" * 400
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    _fill(full_disk)
    done = _compress(full_disk, request)
    err = done.stderr.decode()
    assert done.returncode != 0
    assert err.count("\n") == 1 and "Traceback" not in err and "Logging error" not in err, err
    assert "full" in err
    assert json.loads(done.stdout) == body  # the request, unchanged


def test_compress_when_the_store_cannot_be_created_writes_the_request(full_disk):
    _fill(full_disk)
    done = _compress(full_disk, EXAMPLE)
    err = done.stderr.decode()
    assert done.returncode != 0 and err.count("\n") == 1 and "request written unchanged" in err, err
    assert json.loads(done.stdout) == json.loads(EXAMPLE.read_text())


def test_an_output_file_on_a_full_disk_is_not_left_truncated(full_disk, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(tmp_path / "project"),
           "XDG_DATA_HOME": str(tmp_path / "data")}
    out = full_disk / "out.json"
    _fill(full_disk)
    done = subprocess.run([sys.executable, "-m", "ctxmill", "compress", str(EXAMPLE), "-o", str(out)], cwd=tmp_path,
                          env=env, capture_output=True, timeout=120)
    err = done.stderr.decode()
    assert done.returncode == 1 and err.count("\n") == 1 and "No space left on device" in err, err
    assert not out.exists()
