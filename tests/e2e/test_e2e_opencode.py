"""OpenCode (`opencode run`) plays the scenario against the stand-in as its `anthropic` provider."""

from __future__ import annotations

import json
import os

import pytest

from tests.e2e import clients
from tests.e2e.scenarios import fixed, opencode as scenario_for, verify

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
    env = clients.base_env(home, OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1",
                           OPENCODE_DISABLE_LSP_DOWNLOAD="1", OPENCODE_DISABLE_SHARE="1", **extra)
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
