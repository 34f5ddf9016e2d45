"""The local channel's faces of `bench/adversarial.py --local-trust`: another local user (uid 65534,
root only) squatting the always-on port before install, before a session, in the pause after a
crash of the proxy, and while the proxy cannot start; and web pages reaching the dashboard and the
proxy under a DNS-rebound name. Each face returns rows (face, what, tried, lost, leaked, slowed
past budget), as the other local-trust faces do. Harness: tests/trust/kit.py (`Squatter`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

KEY = "sk-ant-api03-" + "b" * 40
KILLS = 5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def squat_faces(tmp: Path) -> list[tuple]:
    from tests.trust.kit import can_be_another_user

    if not can_be_another_user():
        return []
    os.environ.pop("CTXMILL_PROXY_AUTOSTART", None)
    return [_before_install(tmp / "install"), _before_session(tmp / "session"), _after_crash(tmp / "crash"),
            _cannot_start(tmp / "cannot-start")]


@contextmanager
def _user_home(tmp: Path) -> Iterator[Path]:
    """The user's own global home below `tmp` (XDG_DATA_HOME/ctxmill, made the user's for the
    duration; the keeper and its proxies inherit it): only its config.toml may set `[proxy]`
    (ctxmill.provenance), so a face that configures the proxy writes it there."""
    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp)
    home = tmp / "ctxmill"
    home.mkdir(parents=True)
    try:
        yield home
    finally:
        if before is None:
            os.environ.pop("XDG_DATA_HOME", None)
        else:
            os.environ["XDG_DATA_HOME"] = before


def _before_install(tmp: Path) -> tuple:
    """`ctxmill install claude-code` / `install codex` with the port already taken: leaked when
    the client was pointed at it."""
    from ctxmill import always_on
    from tests.trust.kit import Squatter, ctxmill

    leaked = 0
    for client in ("claude-code", "codex"):
        user, port = tmp / client, _free_port()
        (user / "proj").mkdir(parents=True)
        with Squatter(port, seconds=60) as squatter:
            squatter.wait_bound_or_done(30)
            ctxmill(["install", client, "--port", str(port)], user / "proj", user)
            leaked += always_on.read_state(user / ".local/share/ctxmill") is not None or bool(squatter.got)
    return ("always-on port", "another user's program on the port before install (2 clients)", 2, 0, leaked, None)


def _before_session(tmp: Path) -> tuple:
    """Installed, then the port taken before a session: each thing that runs before a request
    (Claude Code's prompt and tool hooks, the MCP server Codex waits for) must stop it."""
    from ctxmill import always_on
    from tests.trust.kit import Squatter, ctxmill, hook

    user, port = tmp / "user", _free_port()
    (user / "proj").mkdir(parents=True)
    ghome = user / ".local/share/ctxmill"
    ghome.mkdir(parents=True)
    always_on.enable(ghome, "claude-code", port)
    always_on.enable(ghome, "codex", port)
    base = {"session_id": "s", "cwd": str(user / "proj")}
    initialize = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "codex", "version": "0"}}})
    leaked = slowed = 0
    with Squatter(port, seconds=120) as squatter:
        squatter.wait_bound_or_done(30)
        prompt, t1 = hook("UserPromptSubmit", user / "proj", user, {**base, "prompt": "hi"})
        tool, t2 = hook("PreToolUse", user / "proj", user,
                        {**base, "tool_name": "Bash", "tool_input": {"command": "ls"}})
        mcp, t3 = ctxmill(["mcp"], user / "proj", user, initialize + "\n")
        leaked += '"block"' not in prompt.stdout
        leaked += '"continue": false' not in tool.stdout
        leaked += mcp.returncode != 1 or '"error"' not in mcp.stdout
        leaked += bool(squatter.got)
        slowed = sum(t > 5 for t in (t1, t2, t3))
    return ("always-on port", "another user's program on the port before a session (prompt hook, tool hook, MCP "
            "server)", 3, 0, leaked, slowed)


def _after_crash(tmp: Path) -> tuple:
    """The proxy SIGKILLed KILLS times (the keeper's allowance within its window), another user
    binding in a loop from each kill; a request sent at once after each: lost when it failed."""
    import httpx

    from ctxmill import always_on
    from tests.fake_upstream import FakeUpstream, ServerThread
    from tests.trust.kit import Squatter

    fake, port, lost, leaked = FakeUpstream(), _free_port(), 0, 0
    with ServerThread(fake.app()) as upstream, _user_home(tmp) as home:
        (home / "config.toml").write_text(f'[proxy]\nupstream_anthropic = "{upstream.url}"\n')
        always_on.enable(home, "claude-code", port)
        try:
            assert always_on.ensure(home, wait=60) is None
            for _ in range(KILLS):
                pid = always_on.serving_pid(port, timeout=30)
                with Squatter(port, seconds=2.0) as squatter:
                    os.kill(pid, signal.SIGKILL)
                    try:
                        reply = httpx.post(f"http://127.0.0.1:{port}/v1/messages", headers={"x-api-key": KEY},
                                           trust_env=False, timeout=60, json={
                                               "model": "m", "max_tokens": 5,
                                               "messages": [{"role": "user", "content": "hi"}]})
                        lost += reply.status_code != 200
                    except httpx.HTTPError:
                        lost += 1
                    squatter.wait_bound_or_done(30)
                    leaked += squatter.bound or bool(squatter.got)
        finally:
            always_on.stop(port, home)
    return ("always-on port", f"another user binding in a loop from each of {KILLS} kill -9 of the proxy, a request "
            "sent at once", KILLS, lost, leaked, None)


def _cannot_start(tmp: Path) -> tuple:
    """A config the proxy cannot read: the port must stay this user's, and requests be told why."""
    import httpx

    from ctxmill import always_on
    from tests.trust.kit import Squatter

    port = _free_port()
    with _user_home(tmp) as home:
        (home / "config.toml").write_text("[proxy]\nworkers = 'many'\n")
        always_on.enable(home, "codex", port)
        try:
            always_on.ensure(home, wait=60)
            with Squatter(port, seconds=2.0) as squatter:
                squatter.wait_bound_or_done(30)
                leaked = squatter.bound or bool(squatter.got)
            reply = httpx.post(f"http://127.0.0.1:{port}/v1/responses", headers={"authorization": f"Bearer {KEY}"},
                               trust_env=False, timeout=30, json={"model": "m", "input": "hi"})
            lost = reply.status_code != 503 or "cannot start" not in reply.text
        finally:
            always_on.stop(port, home)
    return ("always-on port", "another user binding while the proxy cannot start (bad config)", 1, int(lost),
            int(leaked), None)


def foreign_host_face(tmp: Path) -> list[tuple]:
    """Every route of the dashboard and of the proxy (its dashboard, pages and API) under each
    rebound Host: leaked = answered (or forwarded upstream), lost = memory entries deleted."""
    import httpx
    import orjson
    from starlette.testclient import TestClient

    from ctxmill.dashboard.app import TOKEN_HEADER, create_app
    from ctxmill.proxy.server import served_app, uvicorn_options
    from ctxmill.proxy_config import ProxyConfig
    from ctxmill.settings import Settings
    from memory import api
    from tests.fake_upstream import FakeUpstream, ServerThread
    from tests.proxy_helpers import example
    from tests.trust.test_trust_host import REBOUND

    settings = Settings.load(tmp / "proj" / ".ctxmill")
    entry = api.store(settings.memory, "fact", "kept: the dashboard's memory")
    client = TestClient(create_app(lambda: tmp / "ledger.sqlite3", lambda: settings, token="t"),
                        base_url="http://127.0.0.1:8788")
    tried = leaked = 0
    for host in REBOUND:
        for method, path in (("GET", "/"), ("GET", "/api/memory"), ("GET", "/api/summary"),
                             ("POST", "/api/memory/forget"), ("POST", "/api/memory/pin")):
            headers = {"host": host, "origin": f"http://{host}", "sec-fetch-site": "same-origin", TOKEN_HEADER: "t"}
            reply = client.request(method, path, headers=headers, json={"id": entry.id} if method == "POST" else None)
            tried += 1
            leaked += reply.status_code != 403
    lost = int([e.id for e in api.list_entries(settings.memory)] != [entry.id])
    rows = [("dashboard", f"DNS-rebound Host names ({len(REBOUND)}) on the page, API and write actions", tried, lost,
             leaked, None)]
    fake = FakeUpstream()
    with ServerThread(fake.app()) as upstream:
        config = ProxyConfig(upstream_anthropic=upstream.url, upstream_openai=upstream.url, home=tmp / "p",
                             persist=False)
        with ServerThread(served_app(config, "127.0.0.1"), **uvicorn_options(config)) as proxy:
            tried = leaked = 0
            for host in REBOUND:
                for method, path in (("GET", "/"), ("GET", "/ctxmill/"), ("GET", "/ctxmill/stats"),
                                     ("POST", "/v1/messages"), ("POST", "/v1/responses"), ("GET", "/v1/models")):
                    reply = httpx.request(method, proxy.url + path, trust_env=False, timeout=30,
                                          content=orjson.dumps(example()) if method == "POST" else None,
                                          headers={"host": host, "content-type": "application/json", "x-api-key": KEY})
                    tried += 1
                    leaked += reply.status_code != 403
            leaked += len(fake.received)
    rows.append(("proxy", f"DNS-rebound Host names ({len(REBOUND)}) on its pages, dashboard and API routes", tried,
                 0, leaked, None))
    return rows


def local_channel_faces(tmp: Path) -> list[tuple]:
    started = time.monotonic()
    rows = squat_faces(tmp / "squat") + foreign_host_face(tmp / "host")
    print(f"local channel: {time.monotonic() - started:.0f} s")
    return rows
