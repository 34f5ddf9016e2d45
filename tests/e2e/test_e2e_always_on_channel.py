"""The always-on port squatted by another local user, with the real clients: before a Codex
session (its MCP server is the only thing of ctxmill's that runs before Codex's first request:
Codex sent its `Authorization: Bearer` key on 6 requests), before a Claude Code session, and in
the pause between a `kill -9` of the proxy mid-turn and its restart (the other user bound the
port 75 ms after the kill and got the next request). Each time the session must stop with one
line saying what happened, or go on through this user's own proxy, and never forward a byte to
the other user. Needs root (the other user is uid 65534)."""

from __future__ import annotations

import json

import pytest

from ctxmill import always_on
from tests.e2e import clients
from tests.e2e.scenarios import FINAL, PROMPT, make_project
from tests.e2e.test_e2e_always_on import KILL, TIMEOUT, Session, _ctxmill, _free_port, _script
from tests.e2e.test_e2e_codex import codex_home
from tests.e2e.through_ctxmill import path_with_ctxmill
from tests.trust.kit import OTHER_UID, Squatter, can_be_another_user

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not can_be_another_user(),
                                                  reason="needs root, to run a program as another user")]
CODEX_KEY = "sk-e2e-standin-codex-key"
CLAUDE_KEY = "sk-ant-e2e-standin-claude-key"


def test_codex_stops_before_its_first_request_when_another_user_holds_the_port(codex, home, serve, tmp_path):
    port = _free_port()
    srv = serve(_script("exec_command", "cmd", port))
    chome = codex_home(tmp_path, srv.url)
    env = path_with_ctxmill(clients.base_env(home, CODEX_HOME=str(chome), STANDIN_API_KEY=CODEX_KEY))
    env.pop(always_on.AUTOSTART_ENV, None)
    setup = Session(home, env, port)
    assert _ctxmill(env, home, "install", "codex", "--port", str(port)).returncode == 0
    project = make_project(tmp_path / "one", large=True)
    try:
        with Squatter(port, seconds=5) as squatter:  # after install, before the session
            squatter.wait_bound_or_done(30)
            assert squatter.bound
            res = clients.run([str(codex.bin), "exec", "--skip-git-repo-check", "--color", "never", PROMPT], env=env,
                              cwd=project, timeout=TIMEOUT)
            got = squatter.got
        said = res.stdout + res.stderr
        assert res.returncode != 0 and f"port {port} is held by a program of another user (uid {OTHER_UID})" in said
        assert got == [] and srv.standin.requests == [], got
        res = clients.run([str(codex.bin), "exec", "--skip-git-repo-check", "--color", "never", PROMPT], env=env,
                          cwd=project, timeout=TIMEOUT)  # the port is free again: the session goes through ctxmill
        assert res.returncode == 0 and FINAL in res.stdout, res.describe()
        assert all(r.headers.get("authorization") == "***" for r in srv.standin.model_calls())
    finally:
        always_on.stop(port, setup.ghome)
        _ctxmill(env, home, "uninstall", "codex")


def test_claude_code_keeps_its_key_from_another_user_before_the_session_and_after_a_crash(claude_code, home, serve,
                                                                                          tmp_path):
    port = _free_port()
    srv = serve(_script("Bash", "command", port))
    env = path_with_ctxmill(clients.base_env(
        home, ANTHROPIC_BASE_URL=srv.url, ANTHROPIC_API_KEY=CLAUDE_KEY, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_ERROR_REPORTING="1", CLAUDE_CODE_DISABLE_TERMINAL_TITLE="1", CLAUDE_CODE_MAX_RETRIES="10"))
    env.pop(always_on.AUTOSTART_ENV, None)
    setup = Session(home, env, port)
    assert _ctxmill(env, home, "install", "claude-code", "--port", str(port)).returncode == 0
    project = make_project(tmp_path / "one", large=True)

    def claude(prompt: str) -> dict:
        res = clients.run([str(claude_code.bin), "-p", prompt, "--output-format", "json", "--allowedTools", "Bash"],
                          env=env, cwd=project, timeout=TIMEOUT)
        assert res.returncode in (0, 1), res.describe()
        return json.loads(res.stdout)

    try:
        with Squatter(port, seconds=5) as squatter:  # before the session: the prompt hook blocks the prompt
            squatter.wait_bound_or_done(30)
            assert squatter.bound
            blocked = claude(PROMPT)
            got = squatter.got
        assert f"port {port} is held by a program of another user (uid {OTHER_UID})" in blocked["result"]
        assert got == [] and srv.standin.requests == []

        claude(PROMPT)  # the port is free again: this user's proxy starts and answers
        killed = setup.stats()["pid"]
        with Squatter(port, seconds=90) as squatter:  # from before the kill until after the turn ends
            out = claude(KILL)  # a tool kills the proxy with SIGKILL; the request after it is the one at risk
            got, bound = squatter.got, squatter.bound
        assert not bound and got == []
        assert out["result"] == FINAL and not out["is_error"], out
        assert setup.stats()["pid"] != killed  # the keeper restarted it on the socket it held
    finally:
        always_on.stop(port, setup.ghome)
        _ctxmill(env, home, "uninstall", "claude-code")
