"""The local channel: another local user who binds the always-on port before a session, or in the
pause between a crash of the proxy and its restart, got the API key (Codex's `Authorization:
Bearer` on 6 requests; a bind 75 ms after a kill); the ownership check read /proc only, so macOS
never ran it. (The real clients: tests/e2e/test_e2e_always_on_channel.py.)"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from ctxmill import always_on, channel, keeper
from tests.fake_upstream import FakeUpstream, ServerThread
from tests.test_always_on import _free_port, autostart  # noqa: F401 - the autouse fixture: proxies may start
from tests.trust.kit import OTHER_UID, REPO, Squatter, can_be_another_user, ctxmill, hook

KEY = "sk-ant-api03-" + "k" * 40
another_user = pytest.mark.skipif(not can_be_another_user(), reason="needs root, to run a program as another user")
lsof = pytest.mark.skipif(channel.lsof_uids(1) is None, reason="no lsof on this system")


def _listening_as(uid: int | None) -> tuple[subprocess.Popen, int]:
    """A program of `uid` (None: this user) listening on a free loopback port."""
    code = ("import os, socket, sys, time; uid = int(sys.argv[1]); uid >= 0 and os.setuid(uid); s = socket.socket(); "
            "s.bind(('127.0.0.1', 0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(120)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(-1 if uid is None else uid)], stdout=subprocess.PIPE,
                            text=True)
    return proc, int(proc.stdout.readline())


@pytest.fixture
def upstream():
    fake = FakeUpstream()
    with ServerThread(fake.app()) as server:
        fake.url = server.url
        yield fake


@pytest.fixture
def ghome(tmp_path, monkeypatch) -> Path:
    """The user's own global home (XDG_DATA_HOME/ctxmill), whose config.toml alone may set
    `[proxy]` (ctxmill.provenance); the keeper and its proxies inherit the variable."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    home = tmp_path / "ctxmill"
    home.mkdir()
    return home


def _message(port: int, timeout: float = 60) -> httpx.Response:
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    return httpx.post(f"http://127.0.0.1:{port}/v1/messages", headers={"x-api-key": KEY}, trust_env=False,
                      timeout=timeout, json=body)


@another_user
def test_another_user_binding_the_port_while_the_killed_proxy_restarts_gets_nothing(ghome, upstream):
    """The out-of-memory killer takes the proxy mid-turn; another user tries to bind the port in a
    loop from that moment: the keeper never let the port go, and the request the client sends in
    the pause waits in the backlog and is answered by the restarted proxy, with the key going only
    upstream. (Before: the port was free for RESTART_PAUSE, and the other user got the request.)"""
    port = _free_port()
    (ghome / "config.toml").write_text(f'[proxy]\nupstream_anthropic = "{upstream.url}"\n')
    always_on.enable(ghome, "claude-code", port)
    try:
        assert always_on.ensure(ghome, wait=30) is None
        killed = always_on.serving_pid(port)
        with Squatter(port, seconds=keeper.RESTART_PAUSE + 2) as squatter:
            os.kill(killed, signal.SIGKILL)
            reply = _message(port)
            squatter.wait_bound_or_done(30)
            assert not squatter.bound and squatter.got == [] and squatter.tried > 0
        assert reply.status_code == 200 and upstream.received[-1].headers["x-api-key"] == KEY
        assert always_on.serving_pid(port) not in (None, killed)
    finally:
        always_on.stop(port, ghome)
    assert always_on.port_is_free(port)  # a stop lets it go


@another_user
def test_a_proxy_that_cannot_start_leaves_the_port_held_and_every_request_told_why(ghome):
    """A config the proxy cannot read: the keeper keeps the port (another user cannot take it),
    answers each request with the reason and no retry, and `ensure` says it in one line; once
    fixed, the next session's `ensure` starts the proxy on the same socket."""
    port = _free_port()
    (ghome / "config.toml").write_text("[proxy]\nworkers = 'many'\n")
    always_on.enable(ghome, "codex", port)
    try:
        problem = always_on.ensure(ghome, wait=30)
        assert problem.startswith("the always-on proxy cannot start: ") and "proxy.workers" in problem
        with Squatter(port, seconds=1.0) as squatter:
            squatter.wait_bound_or_done(30)
            assert not squatter.bound
        reply = _message(port)
        assert reply.status_code == 503 and reply.headers["x-should-retry"] == "false"
        assert reply.json()["error"]["message"] == f"ctxmill: {problem}"
        assert always_on.status(ghome)[1].startswith(problem)
        (ghome / "config.toml").write_text("[proxy]\nworkers = 1\n")
        assert always_on.ensure(ghome, wait=30) is None and always_on.serving_pid(port) is not None
    finally:
        always_on.stop(port, ghome)
    assert always_on.port_is_free(port)


def test_a_proxy_killed_again_and_again_leaves_the_port_held_and_answered(tmp_path, monkeypatch):
    """Past MAX_RESTARTS kills within RESTART_WINDOW the keeper stops restarting, and still holds
    the port: every request is told why (the keeper alone; no proxy runs)."""
    sock = keeper.bind(_free_port())
    port = sock.getsockname()[1]
    monkeypatch.setattr(keeper, "RESTART_PAUSE", 0.0)
    dies = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    monkeypatch.setattr(keeper, "proxy_command", lambda *_: [sys.executable, "-c", dies])
    kept = keeper.Keeper(tmp_path, port, sock)
    thread = threading.Thread(target=kept.keep, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not (keeper.record(tmp_path) or {}).get("failed") and time.monotonic() < deadline:
            time.sleep(0.05)
        failed = keeper.record(tmp_path)["failed"]
        assert f"killed {keeper.MAX_RESTARTS + 1} times" in failed and "signal 9" in failed
        reply = _message(port, timeout=10)
        assert reply.status_code == 503 and failed in reply.json()["error"]["message"]
        assert not always_on.port_is_free(port)
    finally:
        kept.stopping = True
        thread.join(10)
        sock.close()
    assert not thread.is_alive()


@pytest.fixture
def squatted(tmp_path):
    """(a user's home, the always-on port set up in it for `client`) with another user's program
    listening on that port: call with the client's name."""
    squatters = []

    def set_up(client: str) -> tuple[Path, int]:
        squatter, port = _listening_as(OTHER_UID)
        squatters.append(squatter)
        user = tmp_path / "user"
        (user / ".local/share/ctxmill").mkdir(parents=True, exist_ok=True)
        always_on.enable(user / ".local/share/ctxmill", client, port)
        return user, port

    yield set_up
    for squatter in squatters:
        squatter.kill()
        squatter.wait()


@another_user
def test_codex_mcp_server_refuses_the_session_when_another_user_holds_the_port(tmp_path, squatted):
    """Codex's first request follows its MCP servers' start and no hook of its own: `ctxmill mcp`
    answers Codex's `initialize` with one line that says what happened, and exits 1 (install
    marks it required, so Codex stops the session). Before, it logged a warning and served."""
    user, port = squatted("codex")
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "codex", "version": "0.171.0"}}}
    done, _ = ctxmill(["mcp"], tmp_path, user, json.dumps(initialize) + "\n")
    answer = json.loads(done.stdout.splitlines()[0])
    assert done.returncode == 1 and answer["id"] == 0 and "result" not in answer
    message = answer["error"]["message"]
    assert f"port {port} is held by a program of another user (uid {OTHER_UID})" in message
    assert "session is stopped" in message and message in done.stderr and "\n" not in message


@another_user
def test_claude_codes_tool_hook_stops_the_session_when_another_user_holds_the_port(tmp_path, squatted):
    """The request after a tool follows PreToolUse with no hook between: when another user holds
    the port by then, PreToolUse stops the session (`continue: false`) with the one line; the
    prompt hook blocks the prompt."""
    user, _ = squatted("claude-code")
    base = {"session_id": "s", "cwd": str(tmp_path)}
    tool, _ = hook("PreToolUse", tmp_path, user, {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                                                   "tool_input": {"command": "ls"}})
    prompt, _ = hook("UserPromptSubmit", tmp_path, user,
                     {**base, "hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    stopped, blocked = json.loads(tool.stdout), json.loads(prompt.stdout)
    assert stopped["continue"] is False and f"uid {OTHER_UID}" in stopped["stopReason"]
    assert blocked["decision"] == "block" and stopped["stopReason"] == blocked["reason"]


@another_user
@lsof
def test_without_proc_another_users_listener_is_named_by_lsof(tmp_path):
    """Where the kernel's tables are not there (macOS, the BSDs), `lsof` names the listener's
    owner: another user's is refused, this user's accepted. (Before, the check read /proc only and
    found nothing to refuse.)"""
    theirs, their_port = _listening_as(OTHER_UID)
    mine, my_port = _listening_as(None)
    try:
        assert channel.lsof_uids(their_port) == {OTHER_UID} and channel.lsof_uids(my_port) == {os.getuid()}
        refused = channel.problem(their_port, tables=())
        assert refused.startswith(f"port {their_port} is held by a program of another user (uid {OTHER_UID})")
        assert channel.problem(my_port, tables=()) is None and channel.mine(my_port, tables=())
    finally:
        for proc in (theirs, mine):
            proc.kill()
            proc.wait()
    assert channel.problem(their_port, tables=()) is None  # nothing listens any more


@another_user
@lsof
def test_a_listener_lsof_cannot_see_counts_as_another_users(tmp_path):
    """An ordinary user's `lsof` sees only that user's processes: run as another user against a
    port this user (root) listens on, it sees no listener while the port accepts, and the port is
    refused."""
    mine, port = _listening_as(None)
    code = ("import os, sys; os.setuid(int(sys.argv[3])); sys.path.insert(0, sys.argv[1]); "
            "from ctxmill import channel; port = int(sys.argv[2]); "
            "print(channel.lsof_uids(port), '|', channel.problem(port, tables=()))")
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable  # one the other user can read
    try:
        done = subprocess.run([python, "-c", code, str(REPO), str(port), str(OTHER_UID)], capture_output=True,
                              text=True, timeout=60, cwd="/", env={"PATH": os.environ.get("PATH", "")})
    finally:
        mine.kill()
        mine.wait()
    seen, said = done.stdout.strip().split(" | ", 1)
    assert done.returncode == 0 and seen == "set()", done.stderr
    assert said.startswith(f"port {port} accepts connections but no program of yours listens there")


def test_nothing_listening_and_this_users_listener_are_fine_whoever_names_them():
    port = _free_port()
    assert channel.problem(port) is None and channel.problem(port, tables=()) is None and not channel.mine(port)
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        assert channel.listener_uids(port) == {os.getuid()} and channel.mine(port)
    assert channel.problem(port, tables=("/nonexistent",)) is None or channel.lsof_uids(port) is None
