"""Claude Code through ctxmill: installed with `ctxmill install claude-code` (user scope, in the test's
HOME), run with `ctxmill run -- claude …` (a proxy of its own, in front of the stand-in). Hooks
inject memory and the tools hint, later requests are compressed, the model expands a marker with
the MCP tool `mcp__ctxmill__deep_expand` and stores a memory; `/compact` writes the checkpoint."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.e2e import clients
from tests.e2e.scenarios import claude_code as scenario_for
from tests.e2e.scenarios import fixed, make_project, verify
from tests.e2e.standin import text_of, tool_results
from tests.e2e.through_ctxmill import (
    MEMORY,
    ctxmill_run,
    markers,
    memory_text,
    path_with_ctxmill,
    proxy_waits_for_compression,
    record,
    unresolved,
    with_ctxmill,
)

pytestmark = pytest.mark.e2e
TIMEOUT = 300
TOOLS = "Read Bash Edit Grep mcp__ctxmill__deep_expand mcp__ctxmill__memory_store"
SEEDED = "The build script build.sh must pass before a fix counts as done."


def claude_env(home, url: str) -> dict:
    return path_with_ctxmill(clients.base_env(
        home, ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-ant-e2e-standin", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_ERROR_REPORTING="1", CLAUDE_CODE_DISABLE_TERMINAL_TITLE="1", CLAUDE_CODE_MAX_RETRIES="1"))


def ctxmill(env, cwd, *args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctxmill", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def run_through(client, project, env, *args) -> clients.Result:
    cmd = ctxmill_run(str(client.bin), *args, "--output-format", "json", "--allowedTools", TOOLS)
    return clients.run(cmd, env=env, cwd=project, timeout=TIMEOUT)


def test_claude_code_through_ctxmill(claude_code, home, serve, tmp_path):
    project = make_project(tmp_path / "proj", large=True)
    proxy_waits_for_compression(home)
    scenario = with_ctxmill(scenario_for(project), "mcp__ctxmill__deep_expand", "mcp__ctxmill__memory_store")
    srv = serve(scenario.script)
    env = claude_env(home, srv.url)
    assert ctxmill(env, project, "install", "claude-code", "--no-proxy").returncode == 0  # `ctxmill run` is the subject
    assert ctxmill(env, project, "memory", "store", "--type", "constraint", SEEDED).returncode == 0

    res = run_through(claude_code, project, env, "-p", scenario.prompt)
    assert res.returncode == 0, res.describe()
    out = json.loads(res.stdout)
    assert out["subtype"] == "success" and not out["is_error"] and out["result"] == scenario.final, res.describe()
    assert not out.get("permission_denials"), out["permission_denials"]
    assert fixed(project)
    assert verify(srv.standin, scenario, "messages") == []

    scripted = srv.standin.scripted_calls()
    # The hooks fired: SessionStart's hint and UserPromptSubmit's memory hit are in the system message.
    system = [text_of(m["content"]) for m in scripted[0].body["messages"] if m["role"] == "system"]
    assert system and "ctxmill is active" in system[0] and SEEDED in system[0], system[:1]
    # Later requests are compressed; the model expanded a marker it was shown with its own MCP call.
    assert any(markers(r.body) for r in scripted)
    expand_turn = len(scenario.script) - 3
    asked = next(r for r in scripted if r.turn == expand_turn + 1)
    expanded = next(t for c, t in tool_results("messages", asked.body).items() if c.endswith(f"_{expand_turn:02d}_0"))
    assert "[build] compiling" in expanded or "def helper_" in expanded, expanded[:300]
    assert MEMORY in memory_text(project)
    assert unresolved(srv.standin.model_calls(), env, project) == []  # every marker shown expands

    # /compact: the PreCompact hook writes the checkpoint, whose task is the person's request.
    compact = run_through(claude_code, project, env, "-p", "/compact", "--resume", out["session_id"])
    assert compact.returncode == 0, compact.describe()
    checkpoint = (project / ".ctxmill" / "checkpoint.md").read_text()
    assert scenario.prompt in checkpoint.split("## Task")[1].split("##")[0]
    assert srv.standin.problems() == []

    sessions = sorted((project / ".ctxmill" / "sessions").glob("proxy-*/proxy-stats.json"))
    totals = [json.loads(p.read_text()) for p in sessions]
    raw = sum(t.get("tokens_before", 0) for t in totals)
    sent = sum(t.get("tokens_after", 0) for t in totals)
    assert sent < raw, totals
    record("claude-code", requests=len(srv.standin.model_calls()), tokens_raw=raw, tokens_sent=sent,
           bytes_at_upstream=sum(r.raw_size for r in srv.standin.model_calls()), seconds=round(res.seconds, 1))
