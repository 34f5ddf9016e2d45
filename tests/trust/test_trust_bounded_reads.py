"""Every file the hooks, memory and checkpoints read from a cloned repository's `.ctxmill/` (and
from the user's global home) is read bounded (ground.home_files): the red team's links to
/dev/zero took 6 GB at SessionStart (`checkpoint.md`) and at every hook (`config.toml`), and a
`MEMORY.md` linked out of the repository was injected at SessionStart. Each shape below goes
through the real hooks, each run limited to 1 GB of address space: the answer keeps everything
else it holds, no byte from outside the repository reaches it, nothing fails open."""

from __future__ import annotations

import pytest

from tests.trust.hostile import CANARY, HOME_FILES, clone, hook_event, plant
from tests.trust.kit import ctxmill, hook

HINT = "ctxmill is active"
LIMIT_MB = 1024
CASES = [(name, shape) for name, shapes in HOME_FILES.items() for shape in shapes]


@pytest.mark.parametrize(("name", "shape"), CASES, ids=[f"{n}:{s}" for n, s in CASES])
def test_a_hostile_file_in_a_cloned_home_is_read_bounded(tmp_path, name, shape):
    user, repo, outside = clone(tmp_path)
    plant(repo / ".ctxmill" / name, shape, outside)
    event = hook_event(repo, user)
    start, _ = hook("SessionStart", repo, user, event, memory_mb=LIMIT_MB)
    prompt, _ = hook("UserPromptSubmit", repo, user, event, memory_mb=LIMIT_MB)
    for done in (start, prompt):
        assert done.returncode == 0, done.stderr
        assert CANARY not in done.stdout + done.stderr
    log = (
        (repo / ".ctxmill" / "ctxmill.log").read_text()
        if (repo / ".ctxmill" / "ctxmill.log").is_file()
        else ""
    )
    assert CANARY not in log
    if (
        name == "config.toml"
    ):  # no settings, no answer: the hooks fail open, the CLI says why in one line
        listed, _ = ctxmill(["memory", "list"], repo, user, memory_mb=LIMIT_MB)
        assert listed.returncode == 2 and len(listed.stderr.splitlines()) == 1, listed.stderr
        assert "config.toml" in listed.stderr and CANARY not in listed.stderr
        return
    assert HINT in start.stdout, (start.stdout, log)
    assert "failed open" not in log, log
    if name != "MEMORY.md":
        assert (
            "The build uses make" in start.stdout
        )  # the rest of the project's memory is still there


def test_a_link_out_of_the_global_home_is_not_injected(tmp_path):
    """The user's own home is held to the same rule: its MEMORY.md linked elsewhere is not read."""
    user, repo, outside = clone(tmp_path)
    global_home = user / ".local" / "share" / "ctxmill"
    global_home.mkdir(parents=True)
    (global_home / "MEMORY.md").symlink_to(outside)
    done, _ = hook("SessionStart", repo, user, hook_event(repo, user), memory_mb=LIMIT_MB)
    assert done.returncode == 0 and HINT in done.stdout and CANARY not in done.stdout


def test_a_link_that_stays_in_the_home_is_followed(tmp_path):
    user, repo, _ = clone(tmp_path)
    home = repo / ".ctxmill"
    (home / "kept.md").write_text((home / "MEMORY.md").read_text())
    (home / "MEMORY.md").unlink()
    (home / "MEMORY.md").symlink_to("kept.md")
    done, _ = hook("SessionStart", repo, user, hook_event(repo, user), memory_mb=LIMIT_MB)
    assert "The build uses make" in done.stdout


def test_a_global_home_linked_as_a_whole_is_read(tmp_path, monkeypatch):
    """How the user keeps their config with their dotfiles: the folder linked, not the file."""
    from ctxmill.settings import Settings

    dotfiles = tmp_path / "dotfiles" / "ctxmill"
    dotfiles.mkdir(parents=True)
    (dotfiles / "config.toml").write_text("[ccr]\nmax_mb = 9\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ctxmill").symlink_to(dotfiles)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert Settings.load(tmp_path / "project").ccr.max_bytes == 9 * 2**20
