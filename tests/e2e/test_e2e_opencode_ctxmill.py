"""OpenCode through ctxmill's plugin: installed with `ctxmill install opencode --project`, the plugin
starts the engine, compresses later requests, the model expands a marker with the MCP tool
`ctxmill_deep_expand` and stores a memory with `ctxmill_memory_store`, and OpenCode's compaction
gets ctxmill's checkpoint with the person's first request."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ground.jsonc import loads
from tests.e2e.scenarios import fixed, make_project, verify
from tests.e2e.scenarios import opencode as scenario_for
from tests.e2e.standin import tool_results
from tests.e2e.test_e2e_opencode import opencode_env, run_opencode, write_config
from tests.e2e.through_ctxmill import (
    MEMORY,
    markers,
    memory_text,
    path_with_ctxmill,
    record,
    stop_engine,
    unresolved,
    with_ctxmill,
)

pytestmark = pytest.mark.e2e


def test_opencode_through_the_ctxmill_plugin(opencode, home, serve, tmp_path):
    project = make_project(tmp_path / "proj", large=True)
    scenario = with_ctxmill(scenario_for(project), "ctxmill_deep_expand", "ctxmill_memory_store")
    memory_turn = len(scenario.script) - 2
    pushed = []

    def input_tokens(rec):  # one overflow report on the memory turn: OpenCode compacts after it
        if rec.turn == memory_turn and not pushed:
            pushed.append(rec.n)
            return 170_000
        return None

    srv = serve(scenario.script, input_tokens=input_tokens)
    write_config(project, srv.url, provider={"anthropic": {
        "options": {"baseURL": f"{srv.url}/v1", "apiKey": "sk-ant-e2e-standin"},
        "models": {"claude-sonnet-4-5": {"limit": {"context": 200_000, "output": 32_000}}}}})
    env = path_with_ctxmill(opencode_env(home, CTXMILL_ENGINE_SOCKET=str(tmp_path / "run" / "engine.sock"),
                                         CTXMILL_PLUGIN_LOG=str(tmp_path / "plugin.log")))
    install = subprocess.run([sys.executable, "-m", "ctxmill", "install", "opencode", "--project"], cwd=project,
                             env=env, capture_output=True, text=True, timeout=120)
    assert install.returncode == 0, install.stderr
    assert loads((project / "opencode.json").read_text())["mcp"]["ctxmill"]["command"] == ["ctxmill", "mcp"]
    try:
        res = run_opencode(opencode, project, env, scenario.prompt)
    finally:
        stop_engine(tmp_path / "run" / "engine.sock")
    assert res.returncode == 0, res.describe()
    assert scenario.final in res.stdout, res.describe()
    assert fixed(project)
    assert verify(srv.standin, scenario, "messages") == [], res.describe()

    log = [json.loads(line) for line in (tmp_path / "plugin.log").read_text().splitlines()]
    transforms = [e for e in log if e["hook"] == "transform"]
    scripted = srv.standin.scripted_calls()
    assert transforms and all("summary" in t for t in transforms), log  # the engine answered every turn
    assert any(t["edits"] for t in transforms)
    # Later requests are compressed, and the model was shown a marker it expanded with its own tool.
    cut = [r for r in scripted if markers(r.body)]
    assert cut, "no request carried a ctxmill marker"
    expand_turn = memory_turn - 1
    asked = next(r for r in scripted if r.turn == expand_turn + 1)
    expanded = next(t for c, t in tool_results("messages", asked.body).items() if c.endswith(f"_{expand_turn:02d}_0"))
    assert "[build] compiling" in expanded or "def helper_" in expanded, expanded[:300]
    assert MEMORY in memory_text(project)
    assert unresolved(srv.standin.model_calls(), env, project) == []  # every marker shown expands
    # Compaction: the hook wrote the checkpoint; the summary request carries it and the first request.
    assert any(e["hook"] == "compacting" and e.get("context") for e in log), log
    assert scenario.prompt in (project / ".ctxmill" / "checkpoint.md").read_text()
    summary = [r for r in srv.standin.model_calls() if r.turn is None and "ctxmill checkpoint" in json.dumps(r.body)]
    assert summary and scenario.prompt in json.dumps(summary[0].body)

    raw = sum(int(t["summary"].split(" → ")[0].replace(",", "")) for t in transforms if "→" in t["summary"])
    sent = sum(int(t["summary"].split(" → ")[1].split(" ")[0].replace(",", "")) for t in transforms if "→" in t["summary"])
    record("opencode", requests=len(transforms), tokens_raw=raw, tokens_sent=sent,
           bytes_at_upstream=sum(r.raw_size for r in scripted), seconds=round(res.seconds, 1))


def test_a_nudge_reaches_opencodes_wire_as_a_user_message(opencode, home, serve, tmp_path):
    """At the medium tier a decision in the prompt gets a memory nudge: the plugin inserts it as a
    user message, and OpenCode sends it (Anthropic: joined to that user turn). The first request
    has nothing to cut, so the reminder waits (a request is never sent larger than raw) for the
    next, which thins the line numbers of the long module's read."""
    project = make_project(tmp_path / "proj", large=True)
    (project / ".ctxmill").mkdir()
    (project / ".ctxmill" / "config.toml").write_text("[compress.tiers]\nmedium = 1\nhigh = 100000000\n")
    scenario = scenario_for(project)
    scenario.prompt = "We decided to keep SQLite instead of Postgres. " + scenario.prompt
    srv = serve(scenario.script)
    write_config(project, srv.url)
    env = path_with_ctxmill(opencode_env(home, CTXMILL_ENGINE_SOCKET=str(tmp_path / "run" / "engine.sock")))
    assert subprocess.run([sys.executable, "-m", "ctxmill", "install", "opencode", "--project"], cwd=project,
                          env=env, capture_output=True, timeout=120).returncode == 0
    try:
        res = run_opencode(opencode, project, env, scenario.prompt)
    finally:
        stop_engine(tmp_path / "run" / "engine.sock")
    assert res.returncode == 0, res.describe()
    assert scenario.final in res.stdout, res.describe()
    assert srv.standin.problems() == []
    calls = [c.body["messages"] for c in srv.standin.scripted_calls()]
    assert "memory_store(type=" not in json.dumps(calls[0])  # held back: nothing saved to pay for it
    nudged = [m for messages in calls for m in messages if "memory_store(type=" in json.dumps(m)]
    assert nudged and all(m["role"] == "user" for m in nudged), json.dumps(calls[1])[:2000]


def test_without_ctxmill_the_plugin_passes_every_turn_unchanged(opencode, home, serve, tmp_path):
    """Fail open: the plugin is installed but ctxmill cannot be started; OpenCode plays the
    scenario as it would without the plugin, and does not wait the time budget on every turn."""
    project = make_project(tmp_path / "proj")
    scenario = scenario_for(project)
    srv = serve(scenario.script)
    write_config(project, srv.url)
    env = path_with_ctxmill(opencode_env(home))
    assert subprocess.run([sys.executable, "-m", "ctxmill", "install", "opencode", "--project"], cwd=project,
                          env=env, capture_output=True, timeout=120).returncode == 0
    log = tmp_path / "plugin.log"
    broken = opencode_env(home, CTXMILL_BIN=str(tmp_path / "no-such-ctxmill"), CTXMILL_PLUGIN_LOG=str(log),
                          CTXMILL_ENGINE_SOCKET=str(tmp_path / "run" / "engine.sock"))
    res = run_opencode(opencode, project, broken, scenario.prompt)
    assert res.returncode == 0, res.describe()
    assert scenario.final in res.stdout and fixed(project), res.describe()
    assert verify(srv.standin, scenario, "messages") == []
    assert not any(markers(r.body) for r in srv.standin.model_calls())
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    skipped = [e for e in entries if e["hook"] == "transform"]
    assert skipped and all(e.get("skipped") == "engine not up" for e in skipped), entries
    assert any("cannot start" in e.get("error", "") for e in entries)
