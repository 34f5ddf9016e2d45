"""The keeper of the always-on proxy (`python -m ctxmill.keeper PORT GLOBAL_HOME`, started detached
by `ctxmill.always_on`): it binds 127.0.0.1:PORT once, holds the listening socket until it is
stopped, and hands it to each proxy it starts (`ctxmill proxy --listen-fd N`).

Clients are pointed at the port for good (their settings name it), so whoever listens there
gets their requests and keys. What must hold:
- The port is never free while the keeper runs: a proxy killed mid-turn (the out-of-memory
  killer, `kill -9`, a crash in C code) is started again on the same socket after a pause, and
  the connections clients open meanwhile wait in its backlog, to be served by the new proxy;
  another user can bind nothing in between.
- When the proxy cannot run (it exited on its own: a config it cannot read, say; or it was
  killed MAX_RESTARTS times within RESTART_WINDOW), the keeper still holds the port and answers
  every connection itself with a 503 whose message says why (`x-should-retry: false`): it
  never forwards anything. The keeper file records the reason (`failed`); SIGUSR1 (sent by the
  next session: `always_on.ensure`) makes it start the proxy again.
- A stop (SIGTERM or SIGINT, to the keeper or to the proxy) ends both, and only then is the
  port let go. The keeper file (`always-on.pid`: pid, port, failed) is removed on the way out.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HOST = "127.0.0.1"
KEEPER_FILE = "always-on.pid"
LOG_FILE = Path("logs") / "always-on-proxy.log"
"""Where the keeper and its proxies write (appended; in the global home)."""
MAX_RESTARTS = 5
RESTART_WINDOW = 600.0
RESTART_PAUSE = 0.5
REQUEST_HEAD_LIMIT = 65536
"""Bytes of a request the keeper reads before answering it (it answers every one the same)."""
POLL = 0.2
"""Seconds between looks at the stop and retry flags while the keeper answers by itself."""


def proxy_command(global_home: Path, port: int, fd: int) -> list[str]:
    return [sys.executable, "-m", "ctxmill", "proxy", "--port", str(port), "--home", str(global_home),
            "--log-level", "warning", "--listen-fd", str(fd)]


def record(global_home: Path) -> dict | None:
    """The keeper file as the running keeper wrote it (None: none, or unreadable)."""
    try:
        mark = json.loads((global_home / KEEPER_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return mark if isinstance(mark, dict) and isinstance(mark.get("pid"), int) else None


def _write(global_home: Path, port: int, failed: str | None = None) -> None:
    from ground.files import atomic_write

    mark = {"pid": os.getpid(), "port": port, **({"failed": failed} if failed else {})}
    atomic_write(global_home / KEEPER_FILE, json.dumps(mark).encode())


def refusal(reason: str) -> bytes:
    """The keeper's answer to every request while no proxy runs: an error both Anthropic's and
    OpenAI's clients show (`error.message`), which their SDKs are told not to retry."""
    body = json.dumps({"type": "error", "error": {"type": "api_error", "message": f"ctxmill: {reason}"}}).encode()
    return (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nx-should-retry: false\r\n"
            b"connection: close\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def _answer(conn: socket.socket, answer: bytes) -> None:
    """Read the request's head (bounded, briefly) and answer it; never raises."""
    try:
        conn.settimeout(1.0)
        head = b""
        while b"\r\n\r\n" not in head and len(head) < REQUEST_HEAD_LIMIT:
            chunk = conn.recv(4096)
            if not chunk:
                break
            head += chunk
        conn.sendall(answer)
    except OSError:
        pass
    finally:
        conn.close()


class Keeper:
    """One keeper's state: the socket it holds, the proxy it runs, what the signals asked."""

    def __init__(self, global_home: Path, port: int, sock: socket.socket) -> None:
        self.global_home, self.port, self.sock = global_home, port, sock
        self.child: subprocess.Popen | None = None
        self.stopping = self.retry = False

    def on_stop(self, signum, frame) -> None:  # signal handler signature
        self.stopping = True
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signum)

    def on_retry(self, signum, frame) -> None:  # signal handler signature
        self.retry = True

    def run_proxy(self) -> int:
        self.child = subprocess.Popen(proxy_command(self.global_home, self.port, self.sock.fileno()),
                                      stdin=subprocess.DEVNULL, pass_fds=(self.sock.fileno(),))
        if self.stopping:  # the stop came while the proxy was being started: it has not seen it
            self.child.terminate()
        code = self.child.wait()
        self.child = None
        return code

    def answer_until_asked(self, reason: str) -> None:
        """Answer every connection with `reason` until a stop or a retry is asked."""
        print(f"ctxmill always-on: {reason}; answering requests with that until the next session asks for a "
              "restart", file=sys.stderr, flush=True)
        _write(self.global_home, self.port, failed=reason)
        self.retry, answer = False, refusal(reason)
        self.sock.setblocking(False)
        try:
            while not (self.stopping or self.retry):
                try:
                    ready, _, _ = select.select([self.sock], [], [], POLL)
                except InterruptedError:
                    continue
                if ready:
                    try:
                        conn, _ = self.sock.accept()
                    except (BlockingIOError, InterruptedError):
                        continue
                    _answer(conn, answer)
        finally:
            self.sock.setblocking(True)
        _write(self.global_home, self.port)

    def keep(self) -> int:
        """Run the proxy until stopped (see the module). Returns the proxy's last exit code."""
        starts: list[float] = []
        code = 0
        while not self.stopping:
            now = time.monotonic()
            starts = [t for t in starts if now - t < RESTART_WINDOW] + [now]
            code = self.run_proxy()
            if self.stopping or code == 0 or -code in (signal.SIGTERM, signal.SIGINT):
                break  # stopped: uvicorn exits 0, or dies of the stop signal it caught, once it has shut down
            if code < 0 and len(starts) <= MAX_RESTARTS:
                print(f"ctxmill always-on: the proxy was killed (signal {-code}); starting it again",
                      file=sys.stderr, flush=True)
                time.sleep(RESTART_PAUSE)
                continue
            self.answer_until_asked(_why(code, len(starts), self.global_home))
            starts = []
        return code


def last_line(path: Path) -> str:
    """The last line of the log at `path` ("" when there is none)."""
    try:
        lines = path.read_bytes()[-2000:].decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def _why(code: int, starts: int, global_home: Path) -> str:
    if code < 0:
        return (f"the always-on proxy was killed {starts} times within {RESTART_WINDOW / 60:g} minutes (last: "
                f"signal {-code}); see {global_home / LOG_FILE}")
    said = last_line(global_home / LOG_FILE)
    return f"the always-on proxy cannot start: {said or f'exit {code}'}"


def bind(port: int) -> socket.socket:
    """127.0.0.1:`port`, listening (OSError when it cannot be bound: another program holds it)."""
    from ctxmill.proxy.server import listen

    return listen(HOST, port)


def main(port: int, global_home: Path) -> int:
    try:
        sock = bind(port)
    except OSError as exc:
        print(f"ctxmill always-on: cannot listen on {HOST}:{port}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        return 1
    keeper = Keeper(global_home, port, sock)
    signal.signal(signal.SIGTERM, keeper.on_stop)
    signal.signal(signal.SIGINT, keeper.on_stop)
    signal.signal(signal.SIGUSR1, keeper.on_retry)
    _write(global_home, port)
    try:
        return keeper.keep()
    finally:
        mark = record(global_home)
        if mark is not None and mark["pid"] == os.getpid():
            (global_home / KEEPER_FILE).unlink(missing_ok=True)
        sock.close()


if __name__ == "__main__":  # PORT GLOBAL_HOME
    sys.exit(main(int(sys.argv[1]), Path(sys.argv[2])))
