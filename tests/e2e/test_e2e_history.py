"""History and distilled skills through the real Claude Code (one short run, no proxy).

Three earlier sessions of the project reach history through the SessionEnd hook that
`ctxmill install claude-code` installed; the oldest says a fact (and a secret) nowhere else.
`ctxmill distill --apply` writes a skill from the command routine those sessions share. Then a new
`claude -p` session: its first request must list the skill (Claude Code loaded the SKILL.md), and
the scripted model calls `mcp__ctxmill__history_search`; the result Claude Code sends back in the
next request must carry the fact. The store's bytes must not hold the secret."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.e2e import clients
from tests.e2e.scenarios import make_project
from tests.e2e.standin import Call, Turn, tool_results
from tests.e2e.through_ctxmill import path_with_ctxmill
from tests.history.sessions import exchange, write_session

pytestmark = pytest.mark.e2e
FACT = "The staging database listens on port 6543 behind the bastion host."
SECRET = "ghp_" + "Rt5" * 12
ROUTINE = ["npm ci", "npm run lint", "npm run test -- --watch=false", "git tag v1.4.0"]
SKILL = "ctxmill-npm-ci-lint-test-git-tag"


def test_history_search_and_a_distilled_skill_in_claude_code(claude_code, home, serve, tmp_path):
    project = make_project(tmp_path / "proj")
    script = [Turn("", [Call("WaitForMcpServers", {"servers": ["ctxmill"]})]),  # claude -p does not wait for MCP servers
              Turn("Let me look in the history of earlier sessions.",
                   [Call("mcp__ctxmill__history_search", {"query": "which port does the staging database use"})]),
              Turn("The staging database is on port 6543.")]
    srv = serve(script)
    data = tmp_path / "xdg-data"
    env = path_with_ctxmill(clients.base_env(
        home, ANTHROPIC_BASE_URL=srv.url, ANTHROPIC_API_KEY="sk-ant-e2e-standin", XDG_DATA_HOME=str(data),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_TERMINAL_TITLE="1", CLAUDE_CODE_MAX_RETRIES="1"))

    def ctxmill(*args, stdin=None):
        return subprocess.run([sys.executable, "-m", "ctxmill", *args], cwd=project, env=env, input=stdin,
                              capture_output=True, text=True, timeout=120)

    assert ctxmill("install", "claude-code", "--no-proxy").returncode == 0  # history needs no proxy
    past = [exchange([FACT, f"Deploy with GITHUB_TOKEN={SECRET}"], ROUTINE)] + [
        exchange([f"Tidy the parser, part {n}"], ROUTINE) for n in (1, 2)]
    for n, items in enumerate(past):  # oldest first: three sessions back, two back, one back
        transcript = write_session(tmp_path / "transcripts", f"past-{n}", items, cwd=str(project))
        event = {"session_id": f"past-{n}", "transcript_path": str(transcript), "cwd": str(project),
                 "hook_event_name": "SessionEnd", "reason": "other"}
        done = ctxmill("hook", "SessionEnd", stdin=json.dumps(event))
        assert done.returncode == 0 and not done.stderr, done.stderr
    from tests.e2e.through_ctxmill import memory_text

    assert "6543" not in memory_text(project)  # the fact is in history only, not in memory
    shown = ctxmill("distill", "--show")  # reviewed first, then written (--apply asks; --yes answers)
    assert shown.returncode == 0 and SKILL in shown.stdout, shown.stdout + shown.stderr
    applied = ctxmill("distill", "--apply", "--yes")
    assert applied.returncode == 0 and SKILL in applied.stdout, applied.stdout + applied.stderr

    res = clients.run([str(claude_code.bin), "-p", "What port does the staging database use?", "--output-format",
                       "json", "--allowedTools", "WaitForMcpServers mcp__ctxmill__history_search"], env=env, cwd=project, timeout=240)
    assert res.returncode == 0, res.describe()
    assert json.loads(res.stdout)["result"] == script[-1].text, res.describe()
    calls = srv.standin.scripted_calls()
    assert SKILL in json.dumps(calls[0].body), "the distilled skill is not in Claude Code's request"
    asked = next(r for r in calls if r.turn == 2)
    result = next(text for cid, text in tool_results("messages", asked.body).items() if cid.endswith("_01_0"))
    assert "6543" in result and "past-0" in result, result[:500]
    assert srv.standin.problems() == []
    store = [p for p in (data / "ctxmill" / "history").iterdir()]
    assert store and all(SECRET.encode() not in p.read_bytes() for p in store)
