"""Hooks a host can run whatever shell started it: install writes this installation's absolute
path at user scope, and doctor fails on a hook that exits 127 outside the activated venv."""

from __future__ import annotations

import os
from pathlib import Path

from ctxmill.doctor_checks import host_path, run_hooks
from ctxmill.install import launch


def test_a_user_install_names_this_installation_even_when_path_finds_it(tmp_path, monkeypatch):
    script = tmp_path / "venv" / "bin" / "ctxmill"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(launch, "this_installation", lambda: script)
    monkeypatch.setenv(
        "PATH", f"{script.parent}{os.pathsep}/usr/bin"
    )  # found through the activated venv only
    command, warning = launch.resolved_command("user")
    assert command == [str(script)] and Path(command[0]).is_absolute() and warning is None
    assert launch.resolved_command("project")[0] == [
        "ctxmill"
    ]  # checked-in files name no local path


def test_doctor_fails_a_hook_that_exits_127_outside_the_activated_venv(tmp_path, monkeypatch):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    tool = venv / "bin" / "only-in-venv"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert str(venv / "bin") not in host_path().split(os.pathsep)
    results = list(run_hooks({"SessionStart": "only-in-venv hook SessionStart"}, {}))
    problem = next(p for name, p in results if name.startswith("hook SessionStart"))
    assert problem and "127" in problem and "ctxmill install" in problem
