"""Small CLI promises: --version (and the MCP server's), unknown flags answered with the usage of
the command they were given to, doctor lines as each check runs, the proxy's banner only once its
port is bound (and one line when the port is taken), replay summaries that keep file names."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from importlib.metadata import version

import pytest

from ctxmill.commands.replay import short_path
from tests.conftest import REPO

VERSION = version("ctxmill")


def ctxmill(*args: str, cwd=None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "ctxmill", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_version_comes_from_the_package_metadata():
    done = ctxmill("--version")
    assert done.returncode == 0 and done.stdout == f"ctxmill {VERSION}\n"


def test_the_mcp_server_reports_the_version(tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def server_info():
        env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(tmp_path / "home")}
        params = StdioServerParameters(command=sys.executable, args=["-m", "ctxmill", "mcp"], env=env, cwd=str(tmp_path))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return (await session.initialize()).server_info

    info = asyncio.run(server_info())
    assert info.name == "ctxmill" and info.version == VERSION


@pytest.mark.parametrize("args, usage", [
    (["compress", "--bogus", "x.json"], "usage: ctxmill compress "),
    (["memory", "list", "--bogus"], "usage: ctxmill memory list "),
    (["doctor", "--bogus"], "usage: ctxmill doctor "),
    (["proxy", "--stats", "--bogus"], "usage: ctxmill proxy "),
    (["--bogus"], "usage: ctxmill "),
])
def test_an_unknown_flag_gets_the_usage_of_its_command(tmp_path, args, usage):
    done = ctxmill(*args, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith(usage), done.stderr
    name = usage.removeprefix("usage: ").strip()
    assert f"{name}: error: unrecognized arguments: --bogus" in done.stderr


def test_doctor_gives_each_line_as_its_check_runs(tmp_path, monkeypatch):
    from ctxmill import doctor_checks
    from ctxmill.commands import doctor

    root, user = tmp_path / "proj", tmp_path / "user"
    (root / ".git").mkdir(parents=True)
    user.mkdir()
    for name, value in (("HOME", user), ("XDG_CONFIG_HOME", user / ".config"), ("XDG_DATA_HOME", user / "data")):
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("CTXMILL_HOME", raising=False)
    monkeypatch.chdir(root)
    assert ctxmill("install", "claude-code", cwd=root).returncode == 0
    ran: list[str] = []
    monkeypatch.setattr(doctor_checks, "run_hooks", lambda hooks, timeouts: iter([("hook x runs", ran.append("hook"))]))
    monkeypatch.setattr(doctor_checks, "run_mcp", lambda command: ("MCP server answers", ran.append("mcp")))
    lines = doctor.checks()
    assert next(lines)[0] == "Claude Code (user scope): files" and ran == []  # given before the slow checks run
    rest = [name for name, _ in lines]
    assert ran == ["hook", "mcp"] and "Claude Code (user scope): MCP server answers" in rest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_proxy_banner_comes_once_the_port_is_bound(tmp_path):
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proxy = subprocess.Popen([sys.executable, "-m", "ctxmill", "proxy", "--port", str(port), "--home",
                              str(tmp_path / "home")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
    try:
        banner = proxy.stderr.readline()
        assert banner.startswith(f"ctxmill proxy on http://127.0.0.1:{port}")
        socket.create_connection(("127.0.0.1", port), timeout=10).close()  # bound when it says so
        taken = ctxmill("proxy", "--port", str(port), "--home", str(tmp_path / "home2"))
        assert taken.returncode == 2 and "ctxmill proxy on" not in taken.stderr
        assert taken.stderr.count("\n") == 1 and f"port {port} on 127.0.0.1 is taken" in taken.stderr
    finally:
        proxy.terminate()
        proxy.wait(timeout=60)


@pytest.mark.parametrize("path, shown", [
    ("/work/shared/corpus/claude-code/Strawhat404__TASK-128__develop-1.jsonl",
     "…/corpus/claude-code/Strawhat404__TASK-128__develop-1.jsonl"),
    ("runs/short.jsonl", "runs/short.jsonl"),
    ("/a/b/" + "x" * 70 + ".jsonl", "…/" + "x" * 70 + ".jsonl"),
])
def test_replay_summary_paths_keep_the_file_name(path, shown):
    assert short_path(path) == shown
    assert len(shown) <= 60 or shown.endswith(path.rsplit("/", 1)[1])
