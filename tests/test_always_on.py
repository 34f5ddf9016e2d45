"""Always-on compression: install points Claude Code and Codex at one local proxy and keeps the
base URL they had as its upstream; uninstall gives every file back byte for byte; the proxy is
started once, on demand, by whoever needs it; `.ctxmill/.gitignore` keeps only memory in git.
(The real clients: tests/e2e/test_e2e_always_on.py.)"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxmill import always_on, channel
from ctxmill.install import codex
from ctxmill.install.claude_code import _with_proxy_env, _without_proxy_env
from ctxmill.keeper import KEEPER_FILE, RESTART_PAUSE
from tests.fake_upstream import FakeUpstream, ServerThread

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def autostart(monkeypatch):
    """The suite keeps hooks from starting proxies (tests/conftest.py); these tests are about it."""
    monkeypatch.delenv(always_on.AUTOSTART_ENV, raising=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ctxmill(root: Path, user: Path, *args: str, input: str | None = None, **extra: str) -> subprocess.CompletedProcess:
    """`ctxmill ARGS` as the user `user` (HOME) in `root`, with no provider variable but `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXMILL_", "XDG_", "ANTHROPIC_", "OPENAI_", "CODEX_"))}
    env.update(HOME=str(user), XDG_DATA_HOME=str(user / "data"), PYTHONPATH=str(REPO), **extra)
    return subprocess.run([sys.executable, "-m", "ctxmill", *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120, input=input)


def _snapshot(*paths: Path) -> list:
    return [(p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) if p.exists() else None for p in paths]


@pytest.fixture
def dirs(tmp_path):
    root, user = tmp_path / "proj", tmp_path / "user"
    (root / ".git").mkdir(parents=True)
    (user / "data" / "ctxmill").mkdir(parents=True)
    return root, user


def test_claude_code_keeps_its_gateway_behind_the_proxy_and_uninstall_gives_the_files_back(dirs):
    root, user = dirs
    settings, config = user / ".claude" / "settings.json", user / "data" / "ctxmill" / "config.toml"
    settings.parent.mkdir()
    settings.write_text('{"env": {"ANTHROPIC_BASE_URL": "https://gw.example/anthropic/",\n'
                        '         "ENABLE_TOOL_SEARCH": "false"}, "model": "opus"}')
    settings.chmod(0o640)
    config.write_text("# my limits\n[proxy]\nworkers = 1  # one core\n")
    before = _snapshot(settings, config)
    port = _free_port()
    proc = _ctxmill(root, user, "install", "claude-code", "--port", str(port))
    assert proc.returncode == 0, proc.stderr
    env = json.loads(settings.read_text())["env"]
    assert env == {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ENABLE_TOOL_SEARCH": "false"}  # theirs stays
    assert config.read_text() == ("# my limits\n[proxy]\nworkers = 1  # one core\n"
                                  'upstream_anthropic = "https://gw.example/anthropic"\n')
    assert always_on.read_state(user / "data" / "ctxmill") == {"port": port, "clients": ["claude-code"]}
    once = _snapshot(settings, config)
    assert _ctxmill(root, user, "install", "claude-code", "--port", str(port)).returncode == 0
    assert _snapshot(settings, config) == once  # the proxy's own URL is never taken for the gateway
    proc = _ctxmill(root, user, "uninstall", "claude-code")
    assert proc.returncode == 0, proc.stderr
    assert _snapshot(settings, config) == before
    assert always_on.read_state(user / "data" / "ctxmill") is None
    assert sorted(p.name for p in root.iterdir()) == [".git"]  # user scope writes nothing into the project


def test_a_shell_base_url_is_kept_and_no_proxy_takes_always_on_back(dirs):
    root, user = dirs
    config = user / "data" / "ctxmill" / "config.toml"
    port = _free_port()
    proc = _ctxmill(root, user, "install", "claude-code", "--port", str(port), ANTHROPIC_BASE_URL="https://gw2.example")
    assert proc.returncode == 0 and "forwards to https://gw2.example" in proc.stdout
    assert 'upstream_anthropic = "https://gw2.example"' in config.read_text()
    assert json.loads((user / ".claude/settings.json").read_text())["env"]["ENABLE_TOOL_SEARCH"] == "true"
    again = _ctxmill(root, user, "install", "claude-code", "--port", str(port + 1),  # from a shell inside a session
                     ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}")
    assert again.returncode == 0 and 'upstream_anthropic = "https://gw2.example"' in config.read_text()
    assert _ctxmill(root, user, "install", "claude-code", "--no-proxy").returncode == 0
    assert "env" not in json.loads((user / ".claude/settings.json").read_text())
    assert not config.exists() and always_on.read_state(user / "data" / "ctxmill") is None
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        proc = _ctxmill(root, user, "install", "claude-code", "--port", str(taken.getsockname()[1]))
    assert proc.returncode == 0 and "taken by another program" in proc.stderr  # hooks and MCP, no always-on
    assert "env" not in json.loads((user / ".claude/settings.json").read_text())
    assert always_on.read_state(user / "data" / "ctxmill") is None


@given(st.dictionaries(st.sampled_from(["ANTHROPIC_BASE_URL", "ENABLE_TOOL_SEARCH", "FOO", "PATH"]),
                       st.text(max_size=8), max_size=4), st.booleans())
def test_proxy_env_round_trips(env, twice):
    """Install (once or twice) then uninstall leaves any `env` as it was; install always points at the proxy."""
    url = "http://127.0.0.1:8787"
    original = {"env": dict(env)} if env else {}
    settings, replaced = _with_proxy_env(json.loads(json.dumps(original)), url, {})
    if twice:
        settings, replaced = _with_proxy_env(settings, url, replaced)
    assert settings["env"]["ANTHROPIC_BASE_URL"] == url
    assert settings["env"]["ENABLE_TOOL_SEARCH"] == env.get("ENABLE_TOOL_SEARCH", "true")
    assert _without_proxy_env(settings, replaced, url) == original


CODEX_CONFIG = '''# my codex
model = "gpt-5.5"
model_provider = "corp"

[model_providers.corp]
name = "Corp gateway"
base_url = "https://gw.corp.example/openai/v1"  # the gateway
env_key = "CORP_KEY"
wire_api = "responses"
'''


@pytest.fixture
def codex_home(tmp_path, monkeypatch):
    home = tmp_path / "codex"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return home


def test_codex_goes_through_the_proxy_with_its_own_provider_and_comes_back_byte_identical(codex_home, tmp_path):
    import tomllib

    config = codex_home / "config.toml"
    config.write_text(CODEX_CONFIG)
    config.chmod(0o600)
    before = _snapshot(config)
    target = codex.CodexTarget.for_user(tmp_path / "ctxmill")
    change, warnings = codex.install_codex(target, ["ctxmill"], "http://127.0.0.1:9999")
    data = tomllib.loads(config.read_text())
    assert warnings == [] and change.proxied and change.upstream == "https://gw.corp.example/openai"
    assert data["model_provider"] == "ctxmill" and data["mcp_servers"]["ctxmill"] == {  # Codex waits for it
        "command": "ctxmill", "args": ["mcp"], "required": True, "startup_timeout_sec": 30}
    assert data["model_providers"]["ctxmill"] == {"name": "ctxmill", "base_url": "http://127.0.0.1:9999/v1",
                                                  "env_key": "CORP_KEY", "wire_api": "responses"}
    assert "# the gateway" in config.read_text()
    codex.install_codex(target, ["ctxmill"], "http://127.0.0.1:9999")  # twice: the provider it had stays
    assert codex.codex_status(target, "http://127.0.0.1:9999") == []
    assert codex.uninstall_codex(target).written == [config]
    assert _snapshot(config) == before


def test_codex_built_in_provider_and_the_cases_install_leaves_alone(codex_home, tmp_path, monkeypatch):
    import tomllib

    target = codex.CodexTarget.for_user(tmp_path / "ctxmill")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gw.example/v1")
    change, warnings = codex.install_codex(target, ["ctxmill"], "http://127.0.0.1:9999")
    assert change.upstream == "https://gw.example" and warnings == []
    assert tomllib.loads(target.config.read_text())["model_providers"]["ctxmill"]["requires_openai_auth"] is True
    codex.uninstall_codex(target)
    assert not target.config.exists()  # created by install, empty again: gone
    target.auth.write_text(json.dumps({"tokens": {"access_token": "x"}}))  # a ChatGPT sign-in
    change, warnings = codex.install_codex(target, ["ctxmill"], "http://127.0.0.1:9999")
    assert not change.proxied and "ChatGPT" in warnings[0]
    assert "model_provider" not in tomllib.loads(target.config.read_text())
    codex.uninstall_codex(target)
    target.config.write_text('model_provider = "odd"\n[model_providers.odd]\nbase_url = "https://x.example/api"\n')
    change, warnings = codex.install_codex(target, ["ctxmill"], "http://127.0.0.1:9999")
    assert not change.proxied and "/v1" in warnings[0]
    with pytest.raises(ValueError, match="not valid TOML"):
        target.config.write_text("model = [")
        codex.install_codex(target, ["ctxmill"], None)
    assert target.config.read_text() == "model = ["


def test_upstreams_in_the_config_file(tmp_path, monkeypatch):
    """In the user's own config.toml (a project's may not name one: ctxmill.provenance)."""
    from ctxmill.errors import ConfigError
    from ctxmill.settings import Settings

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    config = tmp_path / "xdg" / "ctxmill" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[proxy]\nupstream_anthropic = "https://gw.example/a/"\n')
    assert Settings.load(tmp_path).proxy_overrides == {"upstream_anthropic": "https://gw.example/a"}
    for bad in ('upstream_openai = "gw.example"', "upstream_openai = 1"):
        config.write_text(f"[proxy]\n{bad}\n")
        with pytest.raises(ConfigError, match=r"proxy\.upstream_openai"):
            Settings.load(tmp_path).proxy_overrides


def test_one_proxy_starts_on_demand_forwards_to_the_configured_upstream_and_a_prompt_restarts_it(tmp_path, monkeypatch):
    """Two sessions asking at once get one proxy; it forwards to `[proxy] upstream_anthropic`; stopped,
    the next prompt's hook starts it again; CTXMILL_PROXY_AUTOSTART=0 starts nothing."""
    import httpx

    ghome = tmp_path / "ctxmill"
    ghome.mkdir()
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))  # the hook's global home is `ghome`
    port = _free_port()
    always_on.enable(ghome, "claude-code", port)
    fake = FakeUpstream()
    with ServerThread(fake.app()) as upstream:
        (ghome / "config.toml").write_text(f'[proxy]\nupstream_anthropic = "{upstream.url}"\n')
        try:
            results: list = []
            threads = [threading.Thread(target=lambda: results.append(always_on.ensure(ghome))) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            assert results == [None, None]
            pid = always_on.serving_pid(port)
            assert pid is not None and "ctxmill proxy" in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            assert always_on.status(ghome) == (f"always-on compression for claude-code: proxy answers on "
                                               f"http://127.0.0.1:{port} (pid {pid}), forwarding to {upstream.url}",
                                               None)
            reply = httpx.post(f"http://127.0.0.1:{port}/v1/messages", trust_env=False, timeout=30, json={
                "model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
            assert reply.status_code == 200 and fake.received[-1].path == "/v1/messages"

            assert always_on.stop(port) == pid and always_on.serving_pid(port) is None
            monkeypatch.setenv(always_on.AUTOSTART_ENV, "0")
            assert "not running" in always_on.ensure(ghome) and always_on.serving_pid(port) is None
            monkeypatch.delenv(always_on.AUTOSTART_ENV)
            events = {"UserPromptSubmit": {"prompt": "go on"},  # a prompt, and a tool mid-turn, revive it
                      "PreToolUse": {"tool_name": "Bash", "tool_input": {"command": "ls"}}}
            for name, fields in events.items():
                event = json.dumps({"session_id": "s", "cwd": str(tmp_path), "hook_event_name": name, **fields})
                hook = subprocess.run([sys.executable, "-m", "ctxmill", "hook", name], input=event, text=True,
                                      capture_output=True, timeout=60, cwd=tmp_path,
                                      env={**os.environ, "PYTHONPATH": str(REPO)})
                assert hook.returncode == 0
                deadline = time.monotonic() + 30  # the hook waits 1.5 s; a busy machine may need longer
                while always_on.serving_pid(port) is None and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert always_on.serving_pid(port) not in (None, pid), name
                pid = always_on.stop(port, ghome)
        finally:
            always_on.stop(port, ghome)


def test_a_port_held_by_another_program_is_never_taken_over(tmp_path):
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        port = other.getsockname()[1]
        always_on.enable(tmp_path, "codex", port)
        assert "taken by another program" in always_on.ensure(tmp_path, wait=0.3)
        other.listen()  # listening: the hooks' quick check passes, doctor says what is wrong
        assert always_on.ensure(tmp_path, wait=0.3) is None and always_on.serving_pid(port) is None
        assert always_on.status(tmp_path)[1].startswith(f"port {port} is taken")
    always_on.disable(tmp_path, "codex")
    assert always_on.read_state(tmp_path) is None and always_on.status(tmp_path)[0].startswith("always-on compression: off")


def test_the_project_home_gitignore_keeps_memory_and_ignores_the_rest(dirs):
    from ctxmill.paths import GITIGNORE, ensure_gitignore

    root, user = dirs
    assert _ctxmill(root, user, "install", "claude-code", "--project").returncode == 0
    assert (root / ".ctxmill" / ".gitignore").read_text() == GITIGNORE
    for name in ("MEMORY.md", "notes.md", "config.toml", "ccr/ab/cd.zst", "sessions/x/state.json", "ctxmill.log",
                 "checkpoint.md", "installed-claude-code.json"):
        (root / ".ctxmill" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / ".ctxmill" / name).write_text("x")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "--others", "--exclude-standard", ".ctxmill"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert sorted(listed) == [".ctxmill/.gitignore", ".ctxmill/MEMORY.md", ".ctxmill/config.toml", ".ctxmill/notes.md"]
    (root / ".ctxmill" / ".gitignore").write_text("mine\n")
    assert ensure_gitignore(root / ".ctxmill") is None and (root / ".ctxmill" / ".gitignore").read_text() == "mine\n"
    other = root.parent / "other"  # a project that got its .ctxmill/ some other way: the next session adds it
    (other / ".ctxmill").mkdir(parents=True)
    event = json.dumps({"session_id": "s", "cwd": str(other), "hook_event_name": "SessionStart", "source": "startup"})
    assert _ctxmill(other, user, "hook", "SessionStart", input=event).returncode == 0
    deadline = time.monotonic() + 30  # written after the hook's answer, by a detached process
    while not (other / ".ctxmill" / ".gitignore").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (other / ".ctxmill" / ".gitignore").read_text() == GITIGNORE


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0 or not Path("/proc/net/tcp").exists(),
                    reason="needs root (to listen as another user) and /proc/net/tcp")
def test_a_port_held_by_another_user_gets_no_request_and_no_prompt(dirs):
    """Another user's program on the always-on port would see the person's keys: install leaves
    the client alone, doctor says why, and the prompt hook blocks the prompt."""
    root, user = dirs
    ghome = user / "data" / "ctxmill"
    listener = subprocess.Popen([sys.executable, "-c", "import os, socket, sys, time; os.setuid(65534); "
                                 "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
                                 "print(s.getsockname()[1], flush=True); time.sleep(60)"],
                                stdout=subprocess.PIPE, text=True)
    try:
        port = int(listener.stdout.readline())
        assert channel.listener_uids(port) == {65534}
        proc = _ctxmill(root, user, "install", "claude-code", "--port", str(port))
        assert proc.returncode == 0 and "another user (uid 65534)" in proc.stderr
        assert always_on.read_state(ghome) is None
        always_on.enable(ghome, "claude-code", port)  # e.g. it took the port after install
        assert "another user" in always_on.status(ghome)[1] and "another user" in always_on.ensure(ghome)
        event = json.dumps({"session_id": "s", "cwd": str(root), "hook_event_name": "UserPromptSubmit", "prompt": "hi"})
        hook = _ctxmill(root, user, "hook", "UserPromptSubmit", input=event)
        answer = json.loads(hook.stdout)
        assert answer["decision"] == "block" and "another user" in answer["reason"]
    finally:
        listener.kill()
        listener.wait()


def test_a_port_left_in_time_wait_by_a_stopped_proxy_is_free():
    """A stopped proxy's closed connections linger in TIME_WAIT; the proxy binds with SO_REUSEADDR,
    so they must not make the port look taken (they did: restarts gave up for a minute)."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    conn, _ = server.accept()
    conn.close()  # the server side closes first: its end goes to TIME_WAIT
    time.sleep(0.1)
    client.close()
    server.close()
    assert always_on.port_is_free(port)
    with socket.socket() as listening:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(("127.0.0.1", port))
        listening.listen()
        assert not always_on.port_is_free(port)


def test_a_killed_proxy_is_started_again_and_a_stop_ends_its_keeper(tmp_path):
    """SIGKILL (the out-of-memory killer, `kill -9`) mid-session: the keeper starts the proxy again
    while the client is still retrying; `stop` ends the proxy and its keeper."""
    import signal

    port = _free_port()
    always_on.enable(tmp_path, "claude-code", port)
    try:
        assert always_on.ensure(tmp_path, wait=30) is None
        first = always_on.serving_pid(port)
        keeper = json.loads((tmp_path / KEEPER_FILE).read_text())["pid"]
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while always_on.serving_pid(port) in (None, first) and time.monotonic() < deadline:
            time.sleep(0.1)
        second = always_on.serving_pid(port)
        assert second not in (None, first)
        os.kill(second, signal.SIGKILL)  # and stopped while its keeper starts it again: both end
        # stop names whichever process it found serving (the keeper may have started a third already)
        assert always_on.stop(port, tmp_path) not in (None, first) and always_on.serving_pid(port) is None
        assert not always_on._alive(keeper) and not (tmp_path / KEEPER_FILE).exists()
        time.sleep(RESTART_PAUSE + 3)
        assert always_on.serving_pid(port) is None  # nothing came back
    finally:
        always_on.stop(port, tmp_path)


def _until_exited(pid: int, seconds: float = 10.0) -> None:
    """Wait until `pid` has exited (gone, or a zombie: its sockets are closed)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return
        except (OSError, IndexError):
            return
        time.sleep(0.01)


def test_a_session_starting_while_the_keeper_restarts_the_proxy_starts_no_second_one(tmp_path):
    import signal

    port = _free_port()
    always_on.enable(tmp_path, "codex", port)
    try:
        assert always_on.ensure(tmp_path, wait=30) is None
        keeper = json.loads((tmp_path / KEEPER_FILE).read_text())["pid"]
        killed = always_on.serving_pid(port)
        os.kill(killed, signal.SIGKILL)
        _until_exited(killed)  # a kill is delivered asynchronously: till then its socket still accepts
        assert always_on.ensure(tmp_path, wait=30) is None  # the keeper holds the port: requests wait for it
        assert always_on.serving_pid(port, timeout=30) not in (None, killed)
        assert json.loads((tmp_path / KEEPER_FILE).read_text())["pid"] == keeper
        children = Path(f"/proc/{keeper}/task/{keeper}/children")
        if children.exists():
            assert len(children.read_text().split()) == 1
    finally:
        always_on.stop(port, tmp_path)
