"""The OpenCode engine's socket beside a hostile local user: with XDG_RUNTIME_DIR unset it lives in
`/tmp/ctxmill-<uid>/`, which another user may create first. The engine refuses a folder it does
not own, never opens its lock through a link, and the plugin never talks to a socket that is not
this user's. Another user is simulated by chown-ing to uid 65534 (needs root; skipped otherwise)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxmill.engine.server import default_socket, private_socket_folder, runtime_folder
from ground.files import private_dir
from tests.trust.kit import OTHER_UID, REPO, can_be_another_user, plugin_turn

as_root = pytest.mark.skipif(not can_be_another_user(), reason="chown to another uid needs root")


def _engine(sock: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-m", "ctxmill", "engine", "--socket", str(sock), "--idle-minutes", "0.01"],
                          env=env, capture_output=True, text=True, timeout=60)


def test_without_a_runtime_dir_the_socket_is_in_a_per_user_tmp_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("CTXMILL_ENGINE_SOCKET", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert default_socket() == tmp_path / f"ctxmill-{os.getuid()}" / "engine.sock"


@as_root
def test_a_runtime_folder_another_user_created_first_is_refused(tmp_path):
    folder = tmp_path / f"ctxmill-{os.getuid()}"
    folder.mkdir(mode=0o777)
    os.chown(folder, OTHER_UID, OTHER_UID)
    with pytest.raises(PermissionError, match="uid 65534"):
        private_dir(folder, runtime=True)
    done = _engine(folder / "engine.sock", tmp_path)
    assert done.returncode == 1 and "uid 65534" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (folder / "engine.sock").exists() and not (folder / "engine.sock.lock").exists()


def test_a_runtime_folder_that_is_a_link_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "ctxmill-0").symlink_to(elsewhere)
    with pytest.raises(OSError, match="symbolic link"):
        private_dir(tmp_path / "ctxmill-0", runtime=True)
    assert _engine(tmp_path / "ctxmill-0" / "engine.sock", tmp_path).returncode == 1
    assert list(elsewhere.iterdir()) == []


def test_our_own_runtime_folder_is_made_0700(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    folder = runtime_folder()
    folder.mkdir()
    os.chmod(folder, 0o777)
    private_socket_folder(folder)
    assert oct(folder.stat().st_mode & 0o777) == "0o700"


def test_a_folder_the_user_named_is_checked_never_changed(tmp_path):
    named = tmp_path / "mine"
    named.mkdir()
    os.chmod(named, 0o755)
    assert private_socket_folder(named) == named and oct(named.stat().st_mode & 0o777) == "0o755"
    os.chmod(named, 0o777)
    with pytest.raises(PermissionError, match="other users can write"):
        private_socket_folder(named)
    assert oct(named.stat().st_mode & 0o777) == "0o777"


def test_the_lock_file_is_never_opened_through_a_link(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("the victim's secrets\n")
    os.chmod(victim, 0o600)
    (folder / "engine.sock.lock").symlink_to(victim)
    done = _engine(folder / "engine.sock", tmp_path)
    assert done.returncode == 1 and "engine.sock.lock" in done.stderr
    assert victim.read_text() == "the victim's secrets\n"  # main truncated it: open(lock, "w")


def _plugin_turn(sock: Path, tmp_path: Path, owner: int | None = None) -> tuple[str, list[str]]:
    text, requests, _ = plugin_turn(sock, tmp_path / "plugin.log", owner)
    return text, requests


needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@needs_node
def test_the_plugin_uses_this_users_engine(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    text, requests = _plugin_turn(folder / "engine.sock", tmp_path)
    assert text == "INJECTED" and "/opencode/transform" in requests  # the check below is not vacuous


@needs_node
@as_root
@pytest.mark.parametrize("whose", ["folder", "socket"])
def test_the_plugin_never_talks_to_another_users_engine(tmp_path, whose):
    folder = tmp_path / "run"
    folder.mkdir(mode=0o755)
    if whose == "folder":
        os.chown(folder, OTHER_UID, OTHER_UID)
    text, requests = _plugin_turn(folder / "engine.sock", tmp_path, OTHER_UID if whose == "socket" else None)
    assert text == "hello" and requests == []
    assert "refused" in (tmp_path / "plugin.log").read_text()


@needs_node
def test_the_plugin_refuses_a_folder_others_can_write(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    os.chmod(folder, 0o777)
    text, requests = _plugin_turn(folder / "engine.sock", tmp_path)
    assert text == "hello" and requests == []
