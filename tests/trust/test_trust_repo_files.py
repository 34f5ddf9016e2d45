"""A cloned repository the user did not write: links it ships inside `.ctxmill/` never lead a
ctxmill write outside (the red team's `.ctxmill/ctxmill.log -> ../../.bashrc` plus a config key
`"$(touch /tmp/PWNED)"` appended that text to the shell profile at the first hook warning)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compress.state.session import Session
from ground.files import atomic_write, confined, open_private, private_dir, private_file, private_lock
from tests.trust.kit import OTHER_UID, can_be_another_user, hook

PROFILE = "# the user's shell profile\n"


@pytest.fixture
def cloned(tmp_path):
    """A user home holding a cloned repository whose `.ctxmill/` the attacker wrote."""
    user = tmp_path / "user"
    repo = user / "src" / "cloned"
    (repo / ".git").mkdir(parents=True)
    (repo / ".ctxmill").mkdir()
    (user / ".bashrc").write_text(PROFILE)
    (repo / ".ctxmill" / "config.toml").write_text('[memory]\n"$(touch /tmp/PWNED)" = 1\n')
    return user, repo


def _hook(repo: Path, user: Path, event: str, payload: dict) -> subprocess.CompletedProcess:
    return hook(event, repo, user, payload)[0]


def test_a_linked_log_file_is_never_appended_to(cloned):
    user, repo = cloned
    (repo / ".ctxmill" / "ctxmill.log").symlink_to("../../../.bashrc")
    assert (repo / ".ctxmill" / "ctxmill.log").resolve() == user / ".bashrc"
    for event in ("SessionStart", "UserPromptSubmit"):
        done = _hook(repo, user, event, {"session_id": "s1", "cwd": str(repo), "prompt": "fix the build"})
        assert done.returncode == 0, done.stderr
    assert (user / ".bashrc").read_text() == PROFILE


def test_the_log_is_written_when_it_is_a_plain_file(cloned):
    """The hook above does log its warning (so the test above is not vacuous)."""
    user, repo = cloned
    _hook(repo, user, "UserPromptSubmit", {"session_id": "s1", "cwd": str(repo), "prompt": "fix the build"})
    assert "PWNED" in (repo / ".ctxmill" / "ctxmill.log").read_text()
    assert oct((repo / ".ctxmill" / "ctxmill.log").stat().st_mode & 0o777) == "0o600"


def test_a_linked_project_home_or_sessions_folder_is_never_written_through(cloned, tmp_path):
    user, repo = cloned
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / ".ctxmill" / "sessions").symlink_to(outside)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "fix the build"}}) + "\n")
    _hook(repo, user, "PreCompact", {"session_id": "s1", "cwd": str(repo), "transcript_path": str(transcript)})
    assert list(outside.iterdir()) == []


def _write(writer: str, target: Path) -> None:
    if writer == "atomic_write":
        atomic_write(target, b"x")
    elif writer == "append":  # as the log and session state append
        os.close(open_private(target, os.O_WRONLY | os.O_APPEND))
    elif writer == "private_file":
        private_file(target)
    elif writer == "private_lock":
        private_lock(target)
    else:
        Session.load(target).save()


WRITERS = ["atomic_write", "append", "private_file", "private_lock", "session"]


@pytest.mark.parametrize("writer", WRITERS)
def test_no_writer_goes_through_a_linked_folder(tmp_path, writer):
    home, outside = tmp_path / "home", tmp_path / "outside"
    home.mkdir()
    outside.mkdir()
    (home / "sub").symlink_to(outside)
    with pytest.raises(OSError, match="symbolic link"):
        _write(writer, home / "sub" / "victim")
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("writer", ["append", "private_file", "private_lock"])
def test_no_writer_opens_a_linked_file(tmp_path, writer):
    victim = tmp_path / "victim"
    victim.write_text("kept")
    (tmp_path / "log").symlink_to(victim)
    with pytest.raises(OSError):
        _write(writer, tmp_path / "log")
    assert victim.read_text() == "kept"


def test_an_atomic_write_replaces_a_link_and_never_writes_through_it(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("kept")
    (tmp_path / "file").symlink_to(victim)
    atomic_write(tmp_path / "file", b"new")
    assert victim.read_text() == "kept" and not (tmp_path / "file").is_symlink()


def test_a_session_state_file_that_is_a_link_is_never_appended_to(tmp_path):
    folder = tmp_path / "sessions" / "s1"
    folder.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("kept\n")
    session = Session.load(folder)
    session.save()  # a state file exists: the next save appends
    state = next(folder.glob("*.jsonl"))
    state.unlink()
    state.symlink_to(victim)
    session._pending.append(b'{"end": 1}')
    with pytest.raises(OSError):
        session.save()
    assert victim.read_text() == "kept\n"


def test_confined_accepts_a_real_folder_and_refuses_a_link_anywhere_in_its_path(tmp_path):
    real = private_dir(tmp_path / "a" / "b")
    assert confined(real) == real
    (tmp_path / "link").symlink_to(tmp_path / "a")
    with pytest.raises(OSError, match="symbolic link"):
        confined(tmp_path / "link" / "b")


@pytest.mark.parametrize("name", ["ccr.sqlite3", "ccr.sqlite3-wal", "ccr.sqlite3-shm", "ccr.sqlite3.lock"])
def test_a_project_ccr_store_with_a_linked_file_is_refused(tmp_path, name):
    from ccr.store import CCRError, CCRStore

    store = tmp_path / "ccr"
    store.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("kept")
    (store / name).symlink_to(victim)
    with pytest.raises(CCRError, match="symbolic link"):
        CCRStore(store)
    assert victim.read_text() == "kept"


@pytest.mark.skipif(not can_be_another_user(), reason="chown to another uid needs root")
def test_a_ccr_store_folder_of_another_user_is_refused(tmp_path):
    from ccr.store import CCRError, CCRStore

    store = tmp_path / "ccr"
    store.mkdir(mode=0o777)
    os.chown(store, OTHER_UID, OTHER_UID)
    with pytest.raises(CCRError, match="uid 65534"):
        CCRStore(store)
    assert list(store.iterdir()) == []


@settings(max_examples=60, deadline=None)
@given(depth=st.integers(1, 4), link_at=st.integers(0, 4), writer=st.sampled_from(WRITERS),
       to_file=st.booleans())
def test_whatever_link_a_tree_holds_no_write_lands_outside_it(tmp_path_factory, depth, link_at, writer, to_file):
    """A write at any depth below a home whose path holds a link at any depth (to a folder or to
    a file outside) is refused or stays inside: nothing outside changes."""
    base = tmp_path_factory.mktemp("tree")
    home, outside = base / "home", base / "outside"
    home.mkdir()
    outside.mkdir()
    (outside / "victim").write_text("kept")
    parts = [f"d{i}" for i in range(depth)] + ["target"]
    link_at = min(link_at, len(parts) - 1)
    for i in range(link_at):
        (home.joinpath(*parts[: i + 1])).mkdir(exist_ok=True)
    link = home.joinpath(*parts[: link_at + 1])
    link.symlink_to(outside / "victim" if to_file and link_at == len(parts) - 1 else outside)
    try:
        _write(writer, home.joinpath(*parts))
    except OSError:
        pass
    assert sorted(p.name for p in outside.iterdir()) == ["victim"] and (outside / "victim").read_text() == "kept"
