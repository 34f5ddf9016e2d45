"""Codex (`codex exec`) plays the scenario against the stand-in over the Responses API."""

from __future__ import annotations

import pytest

from tests.e2e import clients
from tests.e2e.scenarios import codex as scenario_for
from tests.e2e.scenarios import fixed, verify

pytestmark = pytest.mark.e2e
TIMEOUT = 240  # seconds; a run takes ~2 s on an idle 2-core machine
MODEL = "gpt-5.5"  # a slug Codex has bundled metadata for: freeform apply_patch, exec_command


def codex_home(tmp_path, url: str):
    home = tmp_path / "codex-home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{MODEL}"\n'
        'model_provider = "standin"\n'
        'approval_policy = "never"\n'
        'sandbox_mode = "workspace-write"\n'
        "[model_providers.standin]\n"
        'name = "stand-in"\n'
        f'base_url = "{url}/v1"\n'
        'env_key = "STANDIN_API_KEY"\n'
        'wire_api = "responses"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
        "[analytics]\nenabled = false\n"
        "[feedback]\nenabled = false\n"
    )
    return home


def run_codex(client, project, home, chome, prompt, *extra, timeout=TIMEOUT) -> clients.Result:
    env = clients.base_env(home, CODEX_HOME=str(chome), STANDIN_API_KEY="sk-e2e-standin")
    cmd = [str(client.bin), "exec", "--skip-git-repo-check", "--color", "never", *extra, prompt]
    return clients.run(cmd, env=env, cwd=project, timeout=timeout)


def test_codex_plays_the_scenario(codex, project, home, serve, tmp_path):
    scenario = scenario_for(project)
    srv = serve(scenario.script)
    res = run_codex(codex, project, home, codex_home(tmp_path, srv.url), scenario.prompt)
    assert res.returncode == 0, res.describe()
    assert scenario.final in res.stdout, res.describe()
    assert fixed(project), (project / "app.py").read_text()[:200]
    assert verify(srv.standin, scenario, "responses") == []

    # What Codex 0.171 sends: the whole conversation every time (store false, no
    # previous_response_id), streamed, with the freeform apply_patch tool.
    for r in srv.standin.scripted_calls():
        assert r.path == "/v1/responses"
        assert r.body["stream"] is True and r.body["store"] is False
        assert "previous_response_id" not in r.body
    last = srv.standin.scripted_calls()[-1].body
    kinds = {it.get("type") for it in last["input"]}
    assert {"message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"} <= kinds
    tools = {t.get("name"): t for t in last["tools"]}
    assert tools["apply_patch"]["type"] == "custom" and tools["exec_command"]["type"] == "function"
