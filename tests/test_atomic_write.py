"""ground.files.atomic_write: a private, complete file, its temporary name found without tempfile."""

from __future__ import annotations

import os
import stat

from ground.files import atomic_write


def test_an_atomic_write_is_private_complete_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "home" / "current.json"
    atomic_write(target, b"first")
    atomic_write(target, b"second", fsync=False)
    assert target.read_bytes() == b"second"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["current.json"]


def test_an_atomic_write_skips_a_temporary_name_that_is_taken(tmp_path, monkeypatch):
    draws = iter([b"\x00" * 6, b"\x00" * 6, b"\x01" * 6])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    taken = tmp_path / ".x000000000000.tmp"
    taken.write_bytes(b"someone else's")
    atomic_write(tmp_path / "x", b"mine")
    assert (tmp_path / "x").read_bytes() == b"mine" and taken.read_bytes() == b"someone else's"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".x000000000000.tmp", "x"]
