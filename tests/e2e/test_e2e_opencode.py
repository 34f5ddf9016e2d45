"""OpenCode (`opencode run`) plays the scenario against the stand-in as its `anthropic` provider."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e import clients
from tests.e2e.scenarios import fixed, opencode_openai, verify
from tests.e2e.scenarios import opencode as scenario_for
from tests.e2e.standin import tool_results

pytestmark = pytest.mark.e2e
TIMEOUT = 300  # seconds; a run takes 15-35 s on a busy 2-core machine (Bun start, snapshots)


def write_config(project, url: str, **more) -> None:
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"anthropic": {"options": {"baseURL": f"{url}/v1", "apiKey": "sk-ant-e2e-standin"}}},
        "model": "anthropic/claude-sonnet-4-5",
        "small_model": "anthropic/claude-haiku-4-5",
        "permission": {"edit": "allow", "bash": "allow", "external_directory": "allow"},
        "autoupdate": False,
        "share": "disabled",
        **more,
    }
    (project / "opencode.json").write_text(json.dumps(config, indent=2))


def opencode_env(home, **extra) -> dict:
    # At every start OpenCode installs @opencode-ai/plugin from the npm registry into its config
    # folder (in the background; with a plugin configured it waits for it). The config folder is
    # kept in the client cache so that happens once, and npm fails fast (instead of ~70 s of
    # retries) when the registry cannot be reached.
    xdg = clients.prefix() / "opencode-xdg-config"
    env = clients.base_env(home, OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1",
                           OPENCODE_DISABLE_LSP_DOWNLOAD="1", OPENCODE_DISABLE_SHARE="1",
                           XDG_CONFIG_HOME=str(xdg), npm_config_fetch_retries="0", **extra)
    rg = clients.rg_dir()  # else OpenCode's grep tool tries to download ripgrep
    if rg:
        env["PATH"] = f"{rg}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_opencode(client, project, env, prompt, *extra, timeout=TIMEOUT) -> clients.Result:
    # `opencode run` joins its arguments and wraps one that holds spaces in double quotes, so the
    # prompt goes in as separate words.
    cmd = [str(client.bin), "run", *extra, *prompt.split()]
    return clients.run(cmd, env=env, cwd=project, timeout=timeout)


def test_opencode_plays_the_scenario(opencode, project, home, serve):
    scenario = scenario_for(project)
    srv = serve(scenario.script)
    write_config(project, srv.url)
    res = run_opencode(opencode, project, opencode_env(home), scenario.prompt)
    assert res.returncode == 0, res.describe()
    assert scenario.final in res.stdout, res.describe()
    assert fixed(project), (project / "app.py").read_text()[:200]
    assert verify(srv.standin, scenario, "messages") == []

    # Besides the agent's requests OpenCode asks its small model for a title (no tools).
    side = [r for r in srv.standin.model_calls() if r.turn is None]
    assert all(not r.body.get("tools") for r in side)
    first = srv.standin.scripted_calls()[0]
    assert first.body["messages"][0]["content"][0]["text"] == scenario.prompt
    assert {"read", "bash", "edit", "grep"} <= {t["name"] for t in first.body["tools"]}


def test_opencode_with_the_openai_provider_speaks_responses(opencode, project, home, serve):
    """The `openai` provider sends the Responses API (store false) and edits with apply_patch."""
    scenario = opencode_openai(project)
    srv = serve(scenario.script)
    write_config(project, srv.url, provider={"openai": {"options": {"baseURL": f"{srv.url}/v1",
                                                                    "apiKey": "sk-e2e-standin"}}},
                 model="openai/gpt-5.5", small_model="openai/gpt-5-mini")
    res = run_opencode(opencode, project, opencode_env(home), scenario.prompt)
    assert res.returncode == 0, res.describe()
    assert scenario.final in res.stdout, res.describe()
    assert fixed(project), (project / "app.py").read_text()[:200]
    assert verify(srv.standin, scenario, "responses") == []
    first = srv.standin.scripted_calls()[0]
    assert first.path == "/v1/responses" and first.body["store"] is False
    tools = {t["name"]: t for t in first.body["tools"]}
    assert tools["apply_patch"]["type"] == "function" and "edit" not in tools


PROBE = Path(__file__).with_name("opencode_probe_plugin.js")


def test_opencode_plugin_hooks_reach_the_wire(opencode, project, home, serve, tmp_path):
    """A plugin's messages.transform changes what is sent; its compacting hook adds to the summary request.

    Groundwork for ctxmill's OpenCode plugin: the stand-in reports 170,000 prompt tokens once, on
    turn 2, against a configured 200K context, so OpenCode compacts mid-scenario.
    """
    scenario = scenario_for(project)
    pushed = []

    def input_tokens(rec):
        if rec.turn == 2 and not pushed:
            pushed.append(rec.n)
            return 170_000
        return None

    srv = serve(scenario.script, input_tokens=input_tokens)
    write_config(project, srv.url, plugin=[PROBE.as_uri()], provider={"anthropic": {
        "options": {"baseURL": f"{srv.url}/v1", "apiKey": "sk-ant-e2e-standin"},
        "models": {"claude-sonnet-4-5": {"limit": {"context": 200_000, "output": 32_000}}}}})
    log = tmp_path / "plugin.log"
    env = opencode_env(home, E2E_PLUGIN_LOG=str(log))
    res = run_opencode(opencode, project, env, scenario.prompt)
    assert res.returncode == 0, res.describe()
    assert scenario.final in res.stdout, res.describe()
    assert fixed(project)
    assert srv.standin.problems() == []

    calls = [json.loads(line) for line in log.read_text().splitlines()]
    transforms = [c for c in calls if c["hook"] == "messages.transform"]
    compactions = [c for c in calls if c["hook"] == "session.compacting"]
    scripted = srv.standin.scripted_calls()
    # One transform per agent request, and one more for the history the compaction summarises (not
    # for the title request); input {}, no third argument.
    assert len(transforms) == len(scripted) + len(compactions)
    after_hook = calls[calls.index(compactions[0]) + 1]
    assert after_hook["hook"] == "messages.transform" and after_hook["roles"] == ["user"] + ["assistant"] * 3
    assert all(t["input"] == {} and t["restArgs"] == 0 for t in transforms)
    assert transforms[0]["roles"] == ["user"] and transforms[0]["infoKeys"][:1]
    session = transforms[0]["sessionIDs"]
    assert len(session) == 1
    tool = next(t["toolPart"] for t in transforms if t["toolPart"])
    assert {"callID", "tool", "state"} <= set(tool["keys"]) and {"input", "output", "status"} <= set(tool["stateKeys"])

    # The mutation reaches the wire, once per result: OpenCode hands the hook fresh copies each turn.
    for r in scripted:
        for text in tool_results("messages", r.body).values():
            assert text.count("[e2e-plugin-mark]") == 1, text[-200:]

    # Compaction: the hook gets the session id and an empty context list; what it pushes is sent.
    assert len(compactions) == 1 and compactions[0]["input"] == {"sessionID": session[0]}
    assert compactions[0]["output"] == {"context": []}
    summary = [r for r in srv.standin.model_calls() if r.turn is None and "E2E-PLUGIN-CONTEXT" in json.dumps(r.body)]
    assert len(summary) == 1, [json.dumps(r.body)[:300] for r in srv.standin.model_calls() if r.turn is None]
    # The summary request is a text transcript built from the *transformed* messages.
    assert "[e2e-plugin-mark]" in json.dumps(summary[0].body)
    # After it the history is a question, the summary and "Continue…": the user's prompt is gone.
    # The agent goes on where it was (turn 3) and finishes.
    after = [r for r in scripted if r.n > summary[0].n]
    assert after and after[0].turn == 3, [r.turn for r in scripted]
    assert scenario.prompt not in json.dumps(after[0].body["messages"])
