"""Claude Code (`claude -p`) plays the scenario against the stand-in: no ctxmill in between yet."""

from __future__ import annotations

import json

import pytest

from compress.formats.requests import cache_ttl
from compress.provider_cache import LIVES, cache_life
from tests.e2e import clients
from tests.e2e.scenarios import claude_code as scenario_for
from tests.e2e.scenarios import fixed, verify

pytestmark = pytest.mark.e2e
TIMEOUT = 240  # seconds; a run takes ~5 s on an idle 2-core machine


def run_claude(client, project, home, url, prompt, *extra, timeout=TIMEOUT, **env_extra) -> clients.Result:
    env = clients.base_env(home, ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-ant-e2e-standin",
                           CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
                           DISABLE_ERROR_REPORTING="1", CLAUDE_CODE_DISABLE_TERMINAL_TITLE="1",
                           CLAUDE_CODE_MAX_RETRIES="1",  # the default retries a 5xx ten times over ~3 min
                           **env_extra)
    cmd = [str(client.bin), "-p", prompt, "--output-format", "json",
           "--allowedTools", "Read Bash Edit Grep", *extra]
    return clients.run(cmd, env=env, cwd=project, timeout=timeout)


def test_claude_code_plays_the_scenario(claude_code, project, home, serve):
    scenario = scenario_for(project)
    srv = serve(scenario.script)
    res = run_claude(claude_code, project, home, srv.url, scenario.prompt)
    assert res.returncode == 0, res.describe()
    out = json.loads(res.stdout)
    assert out["subtype"] == "success" and not out["is_error"], res.describe()
    assert out["result"] == scenario.final
    assert out["num_turns"] == len(scenario.script)
    assert not out.get("permission_denials"), out["permission_denials"]
    assert fixed(project), (project / "app.py").read_text()[:200]
    assert verify(srv.standin, scenario, "messages") == []

    # What Claude Code 2.1 sends (see the notes on issue 14): mid-conversation system messages,
    # adaptive thinking and context management on every agent request (2.1.332: system messages
    # without a beta, thinking shown as "omitted").
    calls = srv.standin.scripted_calls()
    first = calls[0].body
    assert first["stream"] is True
    assert first["thinking"]["type"] == "adaptive"  # 2.1.332 adds "display": "omitted" (empty thinking text)
    assert {"type": "clear_thinking_20251015", "keep": "all"} in first["context_management"]["edits"]
    assert any(m["role"] == "system" for m in first["messages"])
    assert {"Read", "Bash", "Edit", "Grep"} <= {t["name"] for t in first["tools"]}
    assert calls[0].headers.get("anthropic-version") == "2023-06-01"
    assert "context-management" in calls[0].headers.get("anthropic-beta", "")
    # An API key gets the 5-minute cache: breakpoints without a ttl.
    assert {cache_ttl("anthropic", c.body) for c in calls} == {"5m"}


def test_claude_code_asks_for_the_one_hour_cache_and_ctxmill_reads_it(claude_code, project, home, serve):
    """On a subscription (or with ENABLE_PROMPT_CACHING_1H) Claude Code marks its breakpoints
    `"ttl": "1h"`: the engine then prices epochs at the 1-hour write price and waits an hour
    before it takes the cache for expired (`compress.provider_cache.cache_life`)."""
    scenario = scenario_for(project)
    srv = serve(scenario.script)
    res = run_claude(claude_code, project, home, srv.url, scenario.prompt, ENABLE_PROMPT_CACHING_1H="1")
    assert res.returncode == 0, res.describe()
    calls = srv.standin.scripted_calls()
    assert calls and {cache_ttl("anthropic", c.body) for c in calls} == {"1h"}
    assert cache_life("anthropic", cache_ttl("anthropic", calls[-1].body)) == LIVES["1h"]
