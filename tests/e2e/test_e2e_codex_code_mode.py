"""Codex in code mode through ctxmill: on its GPT-6 models Codex 0.171 offers one `exec` tool (in an
`additional_tools` input item, no `tools` field) whose input is JavaScript calling the real tools
(`await tools.exec_command({cmd: …})`, `await tools.apply_patch(…)`). The scripted model reads the
large module, runs the failing build, patches and builds again, each as a program Codex really runs.
ctxmill must read each program as the calls it makes: the read reaches the model whole, the build
log is cut like any command output, and every marker shown expands."""

from __future__ import annotations

import pytest

from tests.e2e.scenarios import codex_code_mode as scenario_for
from tests.e2e.scenarios import fixed, make_project, verify
from tests.e2e.standin import results_by_turn
from tests.e2e.through_ctxmill import markers, proxy_waits_for_compression, run_codex_through, unresolved

pytestmark = pytest.mark.e2e
TIMEOUT = 300
MODEL = "gpt-6.2-sol"  # Codex's bundled metadata: tool_mode code_mode_only, use_responses_lite


def test_codex_code_mode_through_ctxmill(codex, home, serve, tmp_path):
    project = make_project(tmp_path / "proj", large=True)
    proxy_waits_for_compression(home)
    scenario = scenario_for(project)
    srv = serve(scenario.script)
    res, env = run_codex_through(codex, home, project, srv.url, scenario.prompt, MODEL, TIMEOUT)
    assert res.returncode == 0, res.describe()
    assert scenario.final in res.stdout, res.describe()
    assert fixed(project)
    assert verify(srv.standin, scenario, "responses") == []

    scripted = srv.standin.scripted_calls()
    first = scripted[0].body
    assert "tools" not in first and any(it.get("type") == "additional_tools" for it in first["input"])
    whole = (project / "app.py").read_text().replace("a + b", "a - b").rstrip("\n")
    last = max(r.turn for r in scripted)
    # The read program's output: whole while the agent works on the file (through the last request).
    for r in scripted[1:]:
        assert whole in results_by_turn("responses", r.body)[0], f"request {r.n} cut the read"
    # The build log: cut on arrival, in the very request that first carries it.
    log = results_by_turn("responses", next(r for r in scripted if r.turn == 2).body)[1]
    assert markers(log) and "BUILD FAILED" in log and len(log) < 10_000, log[:300]
    assert last == len(scenario.script) - 1
    assert unresolved(srv.standin.model_calls(), env, project) == []  # every marker shown expands
