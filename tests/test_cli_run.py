"""`ctxmill run -- COMMAND`: starts the proxy when none answers, points the command at it, stops it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tomllib

from tests.conftest import REPO
from tests.proxy_fixtures import fake, upstream  # noqa: F401 - fixtures

SHOW = "import os, sys; print(os.environ['ANTHROPIC_BASE_URL'], os.environ['OPENAI_BASE_URL']); sys.exit(3)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_run_starts_the_proxy_sets_base_urls_and_stops_it(tmp_path):
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(tmp_path / ".ctxmill")}
    done = subprocess.run([sys.executable, "-m", "ctxmill", "run", "--port", str(port), "--home", str(tmp_path),
                           "--", sys.executable, "-c", SHOW], env=env, capture_output=True, timeout=60)
    assert done.returncode == 3, done.stderr  # the command's own exit code
    assert done.stdout.decode().split() == [f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}/v1"]
    assert not _listening(port)  # the proxy it started is gone


def test_run_points_codex_at_the_proxy_with_a_responses_provider(tmp_path):
    """Codex reads no base-URL variable: it gets `-c` overrides, before its own arguments."""
    port = _free_port()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    codex = bindir / "codex"
    codex.write_text(f"#!{sys.executable}\nimport json, sys; print(json.dumps(sys.argv[1:]))\n")
    codex.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(tmp_path / ".ctxmill")}
    env.pop("OPENAI_API_KEY", None)
    for key, auth in ((None, {"requires_openai_auth": True}), ("sk-x", {"env_key": "OPENAI_API_KEY"})):
        done = subprocess.run([sys.executable, "-m", "ctxmill", "run", "--port", str(port), "--home", str(tmp_path),
                               "--", str(codex), "exec", "fix it"], capture_output=True, timeout=60,
                              env={**env, "OPENAI_API_KEY": key} if key else env)
        assert done.returncode == 0, done.stderr
        args = json.loads(done.stdout)
        assert args[-2:] == ["exec", "fix it"] and args[0] == "-c" and args[2] == "-c"
        assert args[1] == 'model_provider="ctxmill"'
        provider = tomllib.loads(args[3].replace("model_providers.ctxmill=", "provider = ", 1))["provider"]
        assert provider == {"name": "ctxmill", "base_url": f"http://127.0.0.1:{port}/v1", "wire_api": "responses",
                            **auth}


def test_run_without_a_command_is_a_usage_error(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "ctxmill", "run"], env=env, capture_output=True, timeout=30)
    assert done.returncode == 2 and b"name the command" in done.stderr


def test_run_starts_its_own_proxy_on_a_free_port_when_the_port_is_taken_and_never_attaches(tmp_path, monkeypatch):
    """The default port (8787) held by something that is not this run's proxy: `ctxmill run`
    starts its own on another port; a `--port` that is taken is an error, and `--attach` is the
    explicit way to share one. A port this test holds stands in for 8787, so what listens on
    8787 elsewhere on the machine does not matter."""
    from ctxmill.commands import run as run_command

    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(tmp_path / ".ctxmill")}
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen(1)
        held = squatter.getsockname()[1]
        monkeypatch.setattr(run_command, "DEFAULT_PORT", held)
        picked = run_command._pick_port(None)
        assert picked != held and not _listening(picked)
        free = _free_port()
        monkeypatch.setattr(run_command, "DEFAULT_PORT", free)
        assert run_command._pick_port(None) == free
        taken = subprocess.run([sys.executable, "-m", "ctxmill", "run", "--port", str(held), "--", "true"],
                               env=env, capture_output=True, timeout=60)
        assert taken.returncode == 2 and b"taken" in taken.stderr
        attach = subprocess.run([sys.executable, "-m", "ctxmill", "run", "--attach", "--port", str(held), "--", "true"],
                                env=env, capture_output=True, timeout=60)
        assert attach.returncode == 2 and b"no ctxmill proxy answers" in attach.stderr


def test_run_sends_the_proxy_where_the_command_would_have_gone():
    import argparse

    from ctxmill.commands.run import upstreams

    none = argparse.Namespace(upstream_anthropic=None, upstream_openai=None)
    assert upstreams(none, {}) == []
    assert upstreams(none, {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/", "OPENAI_BASE_URL": "http://gw:8/v1"}) == [
        "--upstream-anthropic", "http://127.0.0.1:9", "--upstream-openai", "http://gw:8"]
    flags = argparse.Namespace(upstream_anthropic="http://a", upstream_openai="http://o")
    assert upstreams(flags, {"ANTHROPIC_BASE_URL": "http://x"}) == ["--upstream-anthropic", "http://a",
                                                                   "--upstream-openai", "http://o"]


def test_a_run_never_takes_the_proxy_another_run_started_on_its_port_for_its_own(tmp_path, monkeypatch):
    """Two runs that pick the same free port at once: the proxy of the one that binds second
    fails, and that run must see the failure (and retry on a free port) rather than take the
    other run's proxy, which answers on the port, for its own: its client would send requests to
    another home and lose them when the other run ends."""
    import pytest

    from ctxmill.commands.run import _start_proxy
    from ctxmill.errors import CliError
    from tests.helpers import eventually

    monkeypatch.setenv("PYTHONPATH", str(REPO))
    port = _free_port()
    other = subprocess.Popen([sys.executable, "-m", "ctxmill", "proxy", "--port", str(port), "--home",
                              str(tmp_path / "other"), "--log-level", "warning"],
                             env={**os.environ, "CTXMILL_HOME": str(tmp_path / "other")}, stderr=subprocess.DEVNULL)
    try:
        eventually(lambda: _listening(port))
        with pytest.raises(CliError, match=f"port {port} on 127.0.0.1 is taken"):
            _start_proxy(port, tmp_path / "own", [])
    finally:
        other.terminate()
        other.wait(timeout=30)


def test_run_points_claude_code_at_its_proxy_over_the_base_url_of_its_settings_files():
    """Claude Code's settings files (always-on compression, a gateway) set ANTHROPIC_BASE_URL in
    their `env`, which wins over the environment: `--settings` wins over them."""
    from ctxmill.commands.run import through_proxy

    command = through_proxy(["/usr/bin/claude", "-p", "hi"], "http://127.0.0.1:9", {})
    assert command[:2] == ["/usr/bin/claude", "--settings"] and command[3:] == ["-p", "hi"]
    assert json.loads(command[2]) == {"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}}
    assert through_proxy(["python3", "x.py"], "http://127.0.0.1:9", {}) == ["python3", "x.py"]


def test_a_project_proxy_forwards_to_the_users_gateway_unless_a_flag_says_otherwise(
        tmp_path, monkeypatch):
    """The upstreams `ctxmill install` keeps in the user's own config serve every project's proxy;
    a project's config cannot redirect them (ctxmill.provenance: a cloned repository's
    `[proxy] upstream_anthropic` received the API key); a flag can."""
    import argparse

    from ctxmill.commands.proxy import _proxy_settings
    from ctxmill.settings import Settings

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    project, user = tmp_path / "proj", tmp_path / "xdg" / "ctxmill"
    project.mkdir()
    user.mkdir(parents=True)
    (user / "config.toml").write_text('[proxy]\nupstream_anthropic = "https://gw.example/a"\nworkers = 7\n')
    args = argparse.Namespace(upstream_anthropic=None, upstream_openai=None, host="127.0.0.1", port=8787,
                              latency_budget_ms=None, workers=None, max_inflight_mb=None, max_connections=None)
    got = _proxy_settings(args, Settings.load(project))
    assert got == {"upstream_anthropic": "https://gw.example/a",
                   "upstream_openai": "https://api.openai.com", "workers": 7}
    (project / "config.toml").write_text(
        '[proxy]\nupstream_anthropic = "https://evil.example"\nworkers = 1\n')
    assert _proxy_settings(args, Settings.load(project)) == got
    args.upstream_anthropic = "https://flag.example"
    assert _proxy_settings(args, Settings.load(project))["upstream_anthropic"] == "https://flag.example"


def test_run_says_what_its_proxy_saved_when_the_command_exits(tmp_path, fake):
    """The command sends one conversation through the proxy `run` started; `run` then prints one
    line with the requests and tokens before and after."""
    from tests.proxy_helpers import example

    (tmp_path / "body.json").write_text(json.dumps({**example(), "model": "claude-sonnet-4-5"}))
    mine = tmp_path / "xdg" / "ctxmill" / "config.toml"  # the user's own: wait for the compression
    mine.parent.mkdir(parents=True)
    mine.write_text('[proxy]\nlatency_budget_ms = "none"\n')
    send = ("import os, urllib.request; body = open('body.json', 'rb').read(); "
            "request = urllib.request.Request(os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', data=body, "
            "headers={'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01'}); "
            "urllib.request.urlopen(request, timeout=60).read()")
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(tmp_path / ".ctxmill"),
           "XDG_DATA_HOME": str(tmp_path / "xdg")}
    done = subprocess.run([sys.executable, "-m", "ctxmill", "run", "--port", str(_free_port()), "--home", str(tmp_path),
                           "--upstream-anthropic", fake.url, "--", sys.executable, "-c", send],
                          env=env, capture_output=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = done.stderr.decode().strip().splitlines()[-1]
    assert line.startswith("ctxmill: 1 request through the proxy, 21,") and "tokens (-" in line, line
