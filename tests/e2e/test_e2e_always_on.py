"""Always-on compression with the real clients: after `ctxmill install claude-code` (or `install
codex`) in a fresh HOME, the client run as it comes (no `ctxmill run`) in two projects sends its
requests through the always-on proxy, compressed, to the base URL it had before (the stand-in
plays a gateway); with the proxy stopped, the next session starts it again and answers; uninstall
leaves the client's settings and ctxmill's config byte-identical, mode included."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ctxmill import always_on
from tests.e2e import clients
from tests.e2e.scenarios import FINAL, PROMPT, make_project
from tests.e2e.standin import Call, Turn
from tests.e2e.test_e2e_codex import codex_home
from tests.e2e.through_ctxmill import markers, path_with_ctxmill

pytestmark = pytest.mark.e2e
TIMEOUT = 240
# The whole proxy config: wait for every compression (which requests carry markers must not depend
# on how busy the machine is) and protect a short tail, so a six-turn session is compressed.
SHORT = "Report the state of the build in one line."
KILL = "Kill the ctxmill proxy with SIGKILL, then report."
CONFIG = '# mine\n[proxy]\nlatency_budget_ms = "none"\n\n[compress]\nprotect_tail_tokens = 0\nprotect_tail_turns = 1\n'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _script(shell: str, args: str, port: int) -> list[Turn]:
    """The scenario in shell commands only (paths relative to the project): one stand-in serves
    sessions in any project. A session asked for SHORT answers at once; one asked to KILL kills
    the proxy (as the out-of-memory killer would) and answers in the request after."""
    def run(command: str) -> Call:
        return Call(shell, {args: command, **({"description": "run"} if shell == "Bash" else {})})

    kill = ("kill -9 $(python3 -c \"import json, urllib.request; print(json.load(urllib.request.urlopen("
            f"'http://127.0.0.1:{port}/ctxmill/stats'))['pid'])\")")

    def first(body: dict, index: int) -> Turn:
        asked = json.dumps(body)
        return Turn(FINAL) if SHORT in asked else Turn("Killing it.", [run(kill)]) if KILL in asked else \
            Turn("Reading the module.", [run("cat app.py")])

    def second(body: dict, index: int) -> Turn:
        return Turn(FINAL) if KILL in json.dumps(body) else Turn("", [run("sh build.sh")])

    return [first, second, Turn("", [run("grep -n 'def add' app.py")]),
            Turn("add() subtracts; fixing it.", [run("sed -i 's/return a - b/return a + b/' app.py")]),
            Turn("", [run("sh build.sh")]), Turn(FINAL)]


def _ctxmill(env: dict, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxmill", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def _snapshot(*paths: Path) -> dict:
    return {p: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) if p.exists() else None for p in paths}


class Session:
    """One client's always-on setup in a fresh HOME: the files it started with, the proxy's config."""

    def __init__(self, home: Path, env: dict, port: int) -> None:
        self.home, self.env, self.port = home, env, port
        self.ghome = home / ".local" / "share" / "ctxmill"
        self.ghome.mkdir(parents=True)
        (self.ghome / "config.toml").write_text(CONFIG)

    def stats(self) -> dict:
        return httpx.get(f"http://127.0.0.1:{self.port}/ctxmill/stats", timeout=10, trust_env=False).json()

    def stop(self) -> None:
        proc = _ctxmill(self.env, self.home, "proxy", "--stop")
        assert proc.returncode == 0 and "stopped" in proc.stdout, proc.stdout + proc.stderr


def _compressed_sessions(standin, since: int) -> list[str]:
    """The requests after the first `since` that carry a ctxmill marker."""
    return [r.n for r in standin.model_calls()[since:] if markers(r.body)]


def test_claude_code_always_on(claude_code, home, serve, tmp_path):
    port = _free_port()
    srv = serve(_script("Bash", "command", port))
    env = path_with_ctxmill(clients.base_env(
        home, ANTHROPIC_BASE_URL=srv.url, ANTHROPIC_API_KEY="sk-ant-e2e-standin",  # the stand-in plays a gateway
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_TERMINAL_TITLE="1", CLAUDE_CODE_MAX_RETRIES="1"))
    env.pop(always_on.AUTOSTART_ENV, None)  # the suite keeps hooks from starting proxies; this test is about it
    setup = Session(home, env, port)
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n    "model": "sonnet",\n    "env": {"MY_VAR": "1"}\n}\n')
    settings.chmod(0o640)
    before = _snapshot(settings, setup.ghome / "config.toml")
    installed = _ctxmill(env, home, "install", "claude-code", "--port", str(port))
    assert installed.returncode == 0, installed.stderr
    assert f"forwards to {srv.url}" in installed.stdout
    assert json.loads(settings.read_text())["env"] == {"MY_VAR": "1", "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
                                                      "ENABLE_TOOL_SEARCH": "true"}

    def claude(project: Path, prompt: str = PROMPT, **extra: str) -> dict:
        res = clients.run([str(claude_code.bin), "-p", prompt, "--output-format", "json", "--allowedTools", "Bash"],
                          env={**env, **extra}, cwd=project, timeout=TIMEOUT)
        assert res.returncode == 0, res.describe()
        out = json.loads(res.stdout)
        assert out["subtype"] == "success" and not out["is_error"] and out["result"] == FINAL, res.describe()
        return out

    try:
        seen = 0
        for name in ("one", "two"):  # two sessions in two projects, no wrapper: both compressed
            project = make_project(tmp_path / name, large=True)
            claude(project)
            assert "return a + b" in (project / "app.py").read_text()
            assert _compressed_sessions(srv.standin, seen), f"no request of the session in {name} was compressed"
            seen = len(srv.standin.model_calls())
        # ENABLE_TOOL_SEARCH=true: deferred tools behind ToolSearch (9 tools sent, not 24)
        first = next(r for r in srv.standin.model_calls() if r.body.get("tools"))
        assert "ToolSearch" in {t.get("name") for t in first.body["tools"]}
        stats = setup.stats()
        assert sum(s["saved"] > 0 for s in stats["sessions"]) == 2, stats["sessions"]
        assert all(s["failures"] == 0 for s in stats["sessions"])
        assert srv.standin.problems() == []
        assert "ok       always-on compression for claude-code: proxy answers" in _ctxmill(env, home, "doctor").stdout

        killed = setup.stats()["pid"]  # killed mid-turn: the request after the kill gets through on a retry
        claude(tmp_path / "one", KILL, CLAUDE_CODE_MAX_RETRIES="10")  # Claude Code's default
        assert setup.stats()["pid"] != killed
        setup.stop()  # the next session starts the proxy again and answers
        claude(tmp_path / "one", SHORT)
        assert len(srv.standin.model_calls()) > seen
        assert setup.stats()["totals"]["requests"] >= 1  # the new proxy carried them
    finally:
        uninstalled = _ctxmill(env, home, "uninstall", "claude-code")
    assert uninstalled.returncode == 0, uninstalled.stderr
    assert _snapshot(settings, setup.ghome / "config.toml") == before
    with pytest.raises(httpx.TransportError):  # the proxy went with the last client: nothing listens
        setup.stats()


def test_codex_always_on(codex, home, serve, tmp_path):
    port = _free_port()
    srv = serve(_script("exec_command", "cmd", port))
    chome = codex_home(tmp_path, srv.url)  # its own provider, with a key and a base URL: kept behind the proxy
    config = chome / "config.toml"
    config.chmod(0o600)
    env = path_with_ctxmill(clients.base_env(home, CODEX_HOME=str(chome), STANDIN_API_KEY="sk-e2e-standin"))
    env.pop(always_on.AUTOSTART_ENV, None)  # the suite keeps hooks from starting proxies; this test is about it
    setup = Session(home, env, port)
    before = _snapshot(config, setup.ghome / "config.toml")
    installed = _ctxmill(env, home, "install", "codex", "--port", str(port))
    assert installed.returncode == 0, installed.stderr
    assert f"forwards to {srv.url}" in installed.stdout

    def codex_exec(project: Path, prompt: str = PROMPT) -> None:
        res = clients.run([str(codex.bin), "exec", "--skip-git-repo-check", "--color", "never", prompt], env=env,
                          cwd=project, timeout=TIMEOUT)
        assert res.returncode == 0 and FINAL in res.stdout, res.describe()

    try:
        seen = 0
        for name in ("one", "two"):
            project = make_project(tmp_path / name, large=True)
            codex_exec(project)
            assert "return a + b" in (project / "app.py").read_text()
            assert _compressed_sessions(srv.standin, seen), f"no request of the session in {name} was compressed"
            seen = len(srv.standin.model_calls())
        calls = srv.standin.model_calls()
        assert all(r.path == "/v1/responses" and r.headers.get("authorization") == "***" for r in calls)  # key kept
        assert srv.standin.problems() == []
        setup.stop()
        codex_exec(tmp_path / "one", SHORT)
        assert setup.stats()["totals"]["requests"] >= 1
    finally:
        uninstalled = _ctxmill(env, home, "uninstall", "codex")
    assert uninstalled.returncode == 0, uninstalled.stderr
    assert _snapshot(config, setup.ghome / "config.toml") == before
    assert os.environ.get("CODEX_HOME") != str(chome)  # the test's Codex home never leaked into this process
