"""Always-on compression: the clients' own settings point them at one local proxy per user, which
the clients start on demand.

`ctxmill install claude-code` / `install codex` (user scope) record the port here
(`<global home>/always-on.json`: `{"port": P, "clients": [...]}`) and point the client at
`http://127.0.0.1:P`. Whoever runs when a session starts calls `ensure()`: Claude Code's
SessionStart, UserPromptSubmit and PreToolUse hooks, and `ctxmill mcp` (Codex starts its MCP
servers with every session, and waits for ctxmill's: `required`). `ensure()` starts the keeper
(`ctxmill.keeper`, detached: its own session, output appended to
`<global home>/logs/always-on-proxy.log`) when nothing answers on P; the keeper binds P once,
holds it until stopped, and runs `ctxmill proxy --home <global home>` on that socket, again
after a kill; the proxy reads its upstreams and limits from `[proxy]` in
`<global home>/config.toml`.

What must hold:
- One proxy: checking and starting happen under an exclusive lock (`always-on.lock`), held until
  the new proxy answers, dies or runs out of time; a second caller then finds it answering. A
  keeper holds the port from its start to its stop, so it is never doubled: while it restarts a
  killed proxy its socket still accepts, and the requests wait for the new proxy.
- A keeper whose proxy could not run answers by itself (`ctxmill.keeper`); the next `ensure()`
  asks it to try again (SIGUSR1) and reports the reason when it fails again.
- `ensure()` never raises; it returns a one-line problem (None: this user's proxy answers). A
  port held by another program is never taken over; one held by another user's program (or one
  nobody can name: `ctxmill.channel`) is named as such, and every caller then keeps the
  client's requests, and their keys, away from it: install leaves the client alone, the hooks
  stop Claude Code's session, the MCP server stops Codex's.
- Cheap when up: one connect to 127.0.0.1 and one look at who listens (`ctxmill.channel`), no
  third-party import (what answers there is checked by `status`, which `ctxmill doctor` shows).
- `CTXMILL_PROXY_AUTOSTART=0` turns starting off (`ctxmill doctor` sets it while it runs the
  installed hooks and MCP server, so a check never leaves a proxy behind).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HOST = "127.0.0.1"
STATE_FILE = "always-on.json"
LOCK_FILE = "always-on.lock"
START_WAIT = 8.0
"""Seconds `ensure` waits for a proxy it started to answer (it takes 1-3 s on a busy machine)."""
AUTOSTART_ENV = "CTXMILL_PROXY_AUTOSTART"


def url(port: int) -> str:
    return f"http://{HOST}:{port}"


def read_state(global_home: Path) -> dict | None:
    """The always-on state (None: no client is set up for it, or the file is unreadable)."""
    try:
        state = json.loads((global_home / STATE_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(state, dict) and isinstance(state.get("port"), int) and isinstance(state.get("clients"), list)
    return state if ok and state["clients"] else None


def enable(global_home: Path, client: str, port: int) -> None:
    """Record that `client` is pointed at the proxy on `port` (one port for every client)."""
    from ground.files import atomic_write

    clients = sorted({*((read_state(global_home) or {}).get("clients", [])), client})
    atomic_write(global_home / STATE_FILE, json.dumps({"port": port, "clients": clients}).encode())


def disable(global_home: Path, client: str) -> None:
    """Forget `client`; the state file goes with the last client (the running proxy is stopped then)."""
    from ground.files import atomic_write

    state = read_state(global_home)
    if state is None or client not in state["clients"]:
        return
    rest = [c for c in state["clients"] if c != client]
    if rest:
        atomic_write(global_home / STATE_FILE, json.dumps({"port": state["port"], "clients": rest}).encode())
        return
    (global_home / STATE_FILE).unlink(missing_ok=True)
    stop(state["port"], global_home)


def serving_pid(port: int, timeout: float = 2.0) -> int | None:
    """The pid of the ctxmill proxy answering on `port` (None: nothing listens, or something else
    does)."""
    import http.client

    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request("GET", "/ctxmill/stats")
        response = conn.getresponse()
        pid = json.loads(response.read()).get("pid") if response.status == 200 else None
    except (OSError, ValueError, AttributeError, http.client.HTTPException):
        return None
    finally:
        conn.close()
    return pid if isinstance(pid, int) else None


def port_is_free(port: int) -> bool:
    """A proxy could listen on `port` now. Bound as uvicorn binds (SO_REUSEADDR): the connections a
    stopped proxy closed linger in TIME_WAIT for a minute and must not count as taking the port."""
    import socket

    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
            return True
        except OSError:
            return False


def _private(name: str) -> bool:
    """A variable the proxy must not inherit: a secret (it forwards each request's own key and
    keeps none), a base URL (pointing at itself) or another home."""
    upper = name.upper()
    return name == "CTXMILL_HOME" or upper.endswith("_BASE_URL") or \
        any(word in upper for word in ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH"))


def _spawn(global_home: Path, port: int):
    """The keeper of the proxy for `port` (`ctxmill.keeper`), detached (a subprocess.Popen)."""
    import subprocess

    from ctxmill.keeper import LOG_FILE
    from ground.files import private_dir, private_file

    log = private_file(private_dir((global_home / LOG_FILE).parent) / LOG_FILE.name)
    env = {k: v for k, v in os.environ.items() if not _private(k)}
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "ctxmill.keeper", str(port), str(global_home)],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=global_home, env=env,
                                start_new_session=True, close_fds=True)


def _keeper(global_home: Path, port: int) -> dict | None:
    """The running keeper of the proxy on `port`: its file (`pid`, and `failed` while it answers
    by itself: `ctxmill.keeper`); None when none runs."""
    from ctxmill.keeper import record

    mark = record(global_home)
    if mark is None or mark.get("port") != port:
        return None
    pid, cmdline = mark["pid"], Path(f"/proc/{mark['pid']}/cmdline")
    try:
        if cmdline.exists() and b"ctxmill.keeper" not in cmdline.read_bytes():
            return None  # a pid the system gave to another program since
    except OSError:
        return None
    return mark if _alive(pid) else None


def ensure(global_home: Path, wait: float = START_WAIT) -> str | None:
    """Make the always-on proxy answer, starting it when down; None when it answers (or always-on
    is off), else what is wrong, in one line. Never raises."""
    from ctxmill import channel

    try:
        state = read_state(global_home)
        if state is None:
            return None
        port = state["port"]
        if channel.accepts(port):
            problem = channel.problem(port)
            keeper = None if problem else _keeper(global_home, port)
            if keeper and keeper.get("failed"):  # its proxy could not run: a new session tries again
                return _retry(global_home, keeper, wait)
            return problem
        if os.environ.get(AUTOSTART_ENV) == "0":
            return f"the proxy on {url(port)} is not running ({AUTOSTART_ENV}=0)"
        return _start(global_home, port, wait)
    except Exception as exc:  # noqa: BLE001 - fail open: a hook or MCP server must never break on this
        return f"{type(exc).__name__}: {exc}"


def _start(global_home: Path, port: int, wait: float) -> str | None:
    from filelock import Timeout

    from ctxmill import channel
    from ground.files import private_lock

    deadline = time.monotonic() + wait
    try:
        with private_lock(global_home / LOCK_FILE, timeout=wait):
            if channel.accepts(port):  # another session started it while this one waited
                return channel.problem(port)
            keeper = _keeper(global_home, port)  # a keeper still binding: wait for it, start none
            while keeper is None and not port_is_free(port):  # a stopped proxy may still be closing its socket
                if time.monotonic() >= deadline:
                    return f"port {port} is taken by another program: `ctxmill install <client> --port N` picks another"
                time.sleep(0.1)
            spawned = None if keeper else _spawn(global_home, port)
            return _until_served(global_home, port, wait, deadline, spawned)
    except Timeout:
        return None if serving_pid(port) is not None else f"another process is starting the proxy on {url(port)}"


def _until_served(global_home: Path, port: int, wait: float, deadline: float, spawned=None) -> str | None:
    """Wait until this user's proxy answers on `port` (None), or say why it does not (the keeper
    `spawned` exited: it could not bind; or it answers by itself: its proxy could not run)."""
    from ctxmill import channel
    from ctxmill.keeper import LOG_FILE, last_line

    while time.monotonic() < deadline:
        if spawned is not None and spawned.poll() is not None:
            said = last_line(global_home / LOG_FILE) or f"exit {spawned.returncode}"
            return channel.problem(port) or f"the proxy did not start: {said}"
        keeper = _keeper(global_home, port)
        if keeper and keeper.get("failed"):
            return str(keeper["failed"])
        if serving_pid(port, timeout=0.5) is not None:
            return channel.problem(port)
        time.sleep(0.05)
    return f"the proxy did not answer on {url(port)} within {wait:g} s (it may still be starting)"


def _retry(global_home: Path, keeper: dict, wait: float) -> str | None:
    """Ask a keeper that answers by itself (its proxy could not run) to start the proxy again."""
    import signal

    os.kill(keeper["pid"], signal.SIGUSR1)
    deadline = time.monotonic() + min(wait, 1.0)
    while time.monotonic() < deadline and (_keeper(global_home, keeper["port"]) or {}).get("failed"):
        time.sleep(0.05)  # the keeper clears `failed` when it starts the proxy
    return _until_served(global_home, keeper["port"], wait, time.monotonic() + wait)


def stop(port: int, global_home: Path | None = None, wait: float = 10.0) -> int | None:
    """Stop the ctxmill proxy answering on `port` (by the pid it reports, never by name) and, with
    `global_home`, its keeper (by the pid it recorded: also when the proxy is between a kill and
    its restart); wait for both to exit. The proxy's pid (else the keeper's), or None when neither ran."""
    import signal

    mark = _keeper(global_home, port) if global_home else None
    keeper = mark["pid"] if mark else None
    pid = serving_pid(port)
    for target in (keeper, pid):  # the keeper forwards the signal to the proxy and ends with it
        if target is not None:
            os.kill(target, signal.SIGTERM)
            break
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(p is not None and _alive(p) for p in (keeper, pid)):
        time.sleep(0.05)
    return pid or keeper


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a child of this process (tests) is gone once it is a zombie
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return True


def _upstreams(global_home: Path) -> str:
    """", forwarding to …" for the upstreams the global config names ("" when it names none)."""
    from ctxmill.config_tables import UPSTREAM_KEYS
    from ctxmill.errors import ConfigError
    from ctxmill.settings import Settings

    try:
        named = Settings.load(global_home).proxy_overrides
    except ConfigError as exc:
        return f", config: {exc}"
    chosen = [named[k] for k in UPSTREAM_KEYS if k in named]
    return f", forwarding to {' and '.join(chosen)}" if chosen else ""


def status(global_home: Path) -> tuple[str, str | None]:
    """(what doctor says, a problem or None) about always-on compression."""
    from ctxmill import channel

    state = read_state(global_home)
    if state is None:
        return ("always-on compression: off (requests are compressed only through `ctxmill run`; "
                "`ctxmill install claude-code` or `ctxmill install codex` turns it on)", None)
    port, clients = state["port"], ", ".join(state["clients"])
    if problem := channel.problem(port):
        return f"always-on compression for {clients}", problem
    keeper = _keeper(global_home, port)
    if keeper and keeper.get("failed"):
        return f"always-on compression for {clients}", f"{keeper['failed']} (the next session starts it again)"
    pid = serving_pid(port)
    if pid is not None:
        return (f"always-on compression for {clients}: proxy answers on {url(port)} (pid {pid})"
                f"{_upstreams(global_home)}", None)
    if not port_is_free(port):
        return (f"always-on compression for {clients}",
                f"port {port} is taken by another program - `ctxmill install <client> --port N` picks another")
    return (f"always-on compression for {clients}: the proxy on {url(port)} is not running now; the next session "
            "starts it (`ctxmill proxy --ensure` starts it now)", None)
