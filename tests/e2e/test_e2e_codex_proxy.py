"""Codex through `ctxmill run`: its `-c` overrides send every Responses request through the proxy,
which compresses the history on the way to the stand-in, and Codex still plays the scenario."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from tests.conftest import REPO
from tests.e2e import clients
from tests.e2e.scenarios import codex as scenario_for
from tests.e2e.scenarios import fixed, verify
from tests.e2e.standin import results_by_turn
from tests.e2e.test_e2e_codex import TIMEOUT, codex_home

pytestmark = pytest.mark.e2e


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ctxmill_env(base: dict) -> dict:
    return {**base, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": os.environ["XDG_DATA_HOME"]}


def test_codex_plays_the_scenario_through_ctxmill_run(codex, project, home, serve, tmp_path):
    scenario = scenario_for(project)
    srv = serve(scenario.script)
    chome = codex_home(tmp_path, srv.url)  # its own provider is the stand-in: `ctxmill run` must override it
    ctx_home = tmp_path / "ctxmill-home"
    ctx_home.mkdir()
    # a small protected tail, so the scenario's short history is compressed
    (ctx_home / "config.toml").write_text("[compress]\nprotect_tail_tokens = 0\nprotect_tail_turns = 1\n")
    port = _free_port()
    proxy = subprocess.Popen([sys.executable, "-m", "ctxmill", "proxy", "--port", str(port), "--home", str(ctx_home),
                              "--upstream-openai", srv.url, "--latency-budget-ms", "none"],
                             env=_ctxmill_env(dict(os.environ)), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url + "/ctxmill/stats", timeout=2)
                break
            except httpx.HTTPError:
                assert proxy.poll() is None and time.monotonic() < deadline, "the proxy did not start"
                time.sleep(0.2)
        env = _ctxmill_env(clients.base_env(home, CODEX_HOME=str(chome), OPENAI_API_KEY="sk-e2e-through-ctxmill"))
        cmd = [sys.executable, "-m", "ctxmill", "run", "--attach", "--port", str(port), "--", str(codex.bin), "exec",
               "--skip-git-repo-check", "--color", "never", scenario.prompt]
        res = clients.run(cmd, env=env, cwd=project, timeout=TIMEOUT)
        sessions = httpx.get(url + "/ctxmill/stats", timeout=10).json()["sessions"]
    finally:
        proxy.terminate()
        proxy.wait(timeout=60)
    assert res.returncode == 0, res.describe()
    assert scenario.final in res.stdout and fixed(project), res.describe()
    assert verify(srv.standin, scenario, "responses") == []  # paired, every turn played, results seen
    calls = srv.standin.scripted_calls()
    assert all(r.path == "/v1/responses" and r.headers.get("authorization") == "***" for r in calls)  # the key went along
    [session] = sessions
    assert session["provider"] == "openai-responses" and session["failures"] == 0
    assert session["requests"] == session["usage_reports"] == len(srv.standin.model_calls())
    assert session["saved"] > 0
    # the build log of turn 1 was decided on arrival: cut once with a marker, its failure kept,
    # the same bytes in every later request
    first_log = results_by_turn("responses", calls[2].body)[1]
    last_log = results_by_turn("responses", calls[-1].body)[1]
    assert "BUILD FAILED" in first_log and "deep_expand(" in first_log and last_log == first_log
