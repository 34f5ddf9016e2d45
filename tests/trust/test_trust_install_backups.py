"""`ctxmill install` backs up the files it changes; those hold API keys and are 0600, so their
backups are too (main left `~/.claude.json.ctxmill.bak` world-readable under the usual umask)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from ctxmill.install.backups import back_up
from tests.trust.kit import ctxmill

SECRET = {"primaryApiKey": "sk-ant-api03-" + "k" * 40}


def _install(root: Path, user: Path, host: str) -> subprocess.CompletedProcess:
    return ctxmill(["install", host], root, user, umask=0o022)[0]


def _private(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    os.chmod(path, 0o600)
    return path


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("host", ["claude-code", "opencode"])
def test_backups_of_private_files_stay_private(tmp_path, host):
    root, user = tmp_path / "proj", tmp_path / "user"
    (root / ".git").mkdir(parents=True)
    if host == "claude-code":
        originals = [_private(user / ".claude.json", SECRET), _private(user / ".claude" / "settings.json", SECRET)]
    else:
        originals = [_private(user / ".config" / "opencode" / "opencode.json", {"provider": SECRET})]
    done = _install(root, user, host)
    assert done.returncode == 0, done.stderr
    for original in originals:
        backup = original.with_name(original.name + ".ctxmill.bak")
        assert json.loads(backup.read_text()) in (SECRET, {"provider": SECRET})
        assert _mode(backup) == 0o600, (backup, oct(_mode(backup)))


def test_a_backup_keeps_a_looser_original_mode_and_is_made_once(tmp_path):
    original = tmp_path / "settings.json"
    original.write_text("{}")
    os.chmod(original, 0o644)
    before = os.umask(0o022)
    try:
        back_up(original, ())
    finally:
        os.umask(before)
    backup = tmp_path / "settings.json.ctxmill.bak"
    assert _mode(backup) == 0o644
    original.write_text('{"changed": 1}')
    back_up(original, ())
    assert backup.read_text() == "{}"  # the first backup stays


def test_a_backup_never_writes_through_a_link(tmp_path):
    original = _private(tmp_path / ".claude.json", SECRET)
    victim = tmp_path / "victim"
    victim.write_text("kept")
    (tmp_path / ".claude.json.ctxmill.bak").symlink_to(victim)
    back_up(original, ())  # a backup (or a link) already there is kept
    assert victim.read_text() == "kept"
