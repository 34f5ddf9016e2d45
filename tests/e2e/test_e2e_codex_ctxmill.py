"""Codex through ctxmill: `ctxmill run -- codex exec …` (a proxy of its own, Codex pointed at it by
`-c` overrides, forwarding to the stand-in from OPENAI_BASE_URL). Later Responses requests are
compressed; the model expands a marker it was shown and stores a memory through its own
`exec_command` tool (`ctxmill expand KEY`, `ctxmill memory store`): Codex (as of 0.169) offers MCP tools
only behind its `tool_search`, which a scripted model cannot drive."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.e2e.scenarios import codex as scenario_for
from tests.e2e.scenarios import fixed, make_project, verify
from tests.e2e.standin import Call, Turn, tool_results
from tests.e2e.through_ctxmill import (
    MEMORY,
    markers,
    memory_text,
    proxy_waits_for_compression,
    record,
    run_codex_through,
    unresolved,
)

pytestmark = pytest.mark.e2e
TIMEOUT = 300


def expand_by_shell(body: dict, index: int) -> Turn:
    keys = markers(body)
    if not keys:
        return Turn("There is no ctxmill marker to expand.")
    return Turn("Let me read the part ctxmill cut.", [Call("exec_command", {"cmd": f"ctxmill expand {keys[0]}", "login": False})])


def test_codex_through_ctxmill(codex, home, serve, tmp_path):
    project = make_project(tmp_path / "proj", large=True)
    proxy_waits_for_compression(home)
    scenario = scenario_for(project)
    store = f"ctxmill memory store --type decision {shlex.quote(MEMORY)}"
    scenario.script[-1:] = [expand_by_shell, Turn("Saving the decision.", [Call("exec_command", {"cmd": store, "login": False})]),
                            scenario.script[-1]]
    srv = serve(scenario.script)
    res, env = run_codex_through(codex, home, project, srv.url, scenario.prompt, "gpt-5.5", TIMEOUT)
    assert res.returncode == 0, res.describe()
    assert scenario.final in res.stdout, res.describe()
    assert fixed(project)
    assert verify(srv.standin, scenario, "responses") == []

    scripted = srv.standin.scripted_calls()
    assert all(r.path == "/v1/responses" for r in scripted)
    assert any(markers(r.body) for r in scripted), "no request carried a ctxmill marker"
    expand_turn = len(scenario.script) - 3
    asked = next(r for r in scripted if r.turn == expand_turn + 1)
    expanded = next(t for c, t in tool_results("responses", asked.body).items() if c.endswith(f"_{expand_turn:02d}_0"))
    assert "[build] compiling" in expanded or "def helper_" in expanded, expanded[:300]
    assert MEMORY in memory_text(project)
    assert unresolved(srv.standin.model_calls(), env, project) == []  # every marker shown expands

    sessions = sorted((project / ".ctxmill" / "sessions").glob("proxy-*/proxy-stats.json"))
    totals = [json.loads(p.read_text()) for p in sessions]
    raw, sent = sum(t["tokens_before"] for t in totals), sum(t["tokens_after"] for t in totals)
    assert sent < raw, totals
    record("codex", requests=len(srv.standin.model_calls()), tokens_raw=raw, tokens_sent=sent,
           bytes_at_upstream=sum(r.raw_size for r in srv.standin.model_calls()), seconds=round(res.seconds, 1))
