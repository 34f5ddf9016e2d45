"""ground.files.read_inside: a project file is read only when it is regular, within its size
cap, and inside its folder once every link is resolved."""

import errno
import os

import pytest

from ground.files import read_inside


def test_a_file_inside_is_read(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"hi")
    assert read_inside(tmp_path / "a.txt", tmp_path, 10) == b"hi"

def test_a_link_that_stays_inside_is_followed(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"hi")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "l").symlink_to(tmp_path / "a.txt")
    assert read_inside(tmp_path / "sub" / "l", tmp_path, 10) == b"hi"

def test_a_link_out_of_the_folder_is_refused(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"secret")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "MEMORY.md").symlink_to(outside)
    with pytest.raises(OSError) as e:
        read_inside(repo / "MEMORY.md", repo, 100)
    assert e.value.errno == errno.EXDEV

def test_a_linked_folder_out_of_the_root_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "f").write_bytes(b"x")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".ctxmill").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        read_inside(repo / ".ctxmill" / "f", repo, 100)

def test_a_device_a_pipe_and_a_big_file_are_refused(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError):
        read_inside(tmp_path / "fifo", tmp_path, 100)
    (tmp_path / "z").symlink_to("/dev/zero")
    with pytest.raises(OSError):
        read_inside(tmp_path / "z", tmp_path, 100)
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(OSError) as e:
        read_inside(tmp_path / "big", tmp_path, 100)
    assert e.value.errno == errno.EFBIG
