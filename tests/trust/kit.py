"""Shared by tests/trust/ and bench/adversarial.py's local-trust faces: an impostor engine on a
Unix socket with a real plugin turn against it, ctxmill run as a hook or an install in a given
user home, and another local user (uid 65534, needs root)."""

from __future__ import annotations

import json
import os
import shutil
import socketserver
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "ctxmill" / "opencode_plugin" / "ctxmill.js"
OTHER_UID = 65534
PLUGIN_BUDGET_MS = 1500


def can_be_another_user() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


class Impostor(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """An engine someone else serves: healthy, and it answers every transform with an injected
    text. `requests`: the paths it was sent (what it would have read)."""

    daemon_threads = True

    def __init__(self, path: str, owner: int | None) -> None:
        self.owner, self.requests = owner, []
        super().__init__(path, _Answer)

    def server_bind(self) -> None:
        super().server_bind()
        if self.owner is not None:  # the socket file belongs to the other user
            os.chown(self.server_address, self.owner, self.owner)


class _Answer(BaseHTTPRequestHandler):
    def address_string(self) -> str:
        return "unix"

    def log_message(self, *args) -> None:
        pass

    def _reply(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.requests.append(self.path)
        self._reply({"ok": True})

    def do_POST(self) -> None:  # noqa: N802
        self.server.requests.append(self.path)
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self._reply({"edits": [{"m": 0, "p": 0, "op": "text", "text": "INJECTED"}]})


NODE_SCRIPT = """
const { CtxmillPlugin } = await import(process.argv[1])
const hooks = await CtxmillPlugin({ directory: "/nowhere" })
const output = { messages: [{ info: { id: "m1", sessionID: "s1", role: "user" }, parts: [{ type: "text", text: "hello" }] }] }
const started = Date.now()
await hooks["experimental.chat.messages.transform"]({}, output)
console.log(JSON.stringify({ text: output.messages[0].parts[0].text, ms: Date.now() - started }))
process.exit(0)
"""


def plugin_turn(sock: Path, log: Path, owner: int | None = None) -> tuple[str, list[str], float]:
    """One transform through the real plugin with an impostor serving `sock` (its socket file
    chown-ed to `owner`): the text the model would see, the requests the impostor received, and
    the hook's time in ms."""
    server = Impostor(str(sock), owner)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {**os.environ, "CTXMILL_ENGINE_SOCKET": str(sock), "CTXMILL_BIN": shutil.which("false") or "false",
               "CTXMILL_PLUGIN_TIMEOUT_MS": str(PLUGIN_BUDGET_MS), "CTXMILL_PLUGIN_LOG": str(log)}
        done = subprocess.run(["node", "--input-type=module", "-e", NODE_SCRIPT, str(PLUGIN)], env=env,
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        return answer["text"], server.requests, answer["ms"]
    finally:
        server.shutdown()
        server.server_close()


def ctxmill(args: list[str], cwd: Path, user: Path, stdin: str = "", umask: int | None = None,
            memory_mb: int | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """`ctxmill ARGS` in `cwd` for a user whose home is `user` (its own XDG folders); the
    result and its wall time in seconds. `memory_mb`: the process's address space is limited to
    it (a read of /dev/zero fails fast instead of taking the machine's memory)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXMILL_", "XDG_"))}
    env.update(HOME=str(user), XDG_CONFIG_HOME=str(user / ".config"), XDG_DATA_HOME=str(user / ".local/share"),
               PYTHONPATH=str(REPO), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")

    def limits() -> None:
        if umask is not None:
            os.umask(umask)
        if memory_mb is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 2**20, memory_mb * 2**20))

    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "ctxmill", *args], input=stdin, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180,
                          preexec_fn=None if umask is None and memory_mb is None else limits)
    return done, time.monotonic() - started


def hook(event: str, repo: Path, user: Path, payload: dict, memory_mb: int | None = None
         ) -> tuple[subprocess.CompletedProcess, float]:
    return ctxmill(["hook", event], repo, user, json.dumps(payload), memory_mb=memory_mb)


STATS_SERVER = """
import http.server, json
class Stats(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        data = json.dumps({"sessions": [], "totals": {}, "pid": 1}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Stats)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def attach_to_a_server_run_by(uid: int | None, tmp_path: Path) -> subprocess.CompletedProcess:
    """`ctxmill run --attach` to a server answering like a ctxmill proxy, run by `uid` (None: this user)."""
    python = "/usr/bin/python3" if uid is not None and os.path.exists("/usr/bin/python3") else sys.executable
    server = subprocess.Popen([python, "-c", STATS_SERVER], stdout=subprocess.PIPE, text=True,
                              preexec_fn=(lambda: os.setuid(uid)) if uid is not None else None, cwd="/")
    try:
        port = int(server.stdout.readline())
        env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(tmp_path / ".ctxmill"),
               "ANTHROPIC_API_KEY": "sk-ant-api03-" + "k" * 40}
        return subprocess.run([sys.executable, "-m", "ctxmill", "run", "--attach", "--port", str(port), "--", "true"],
                              env=env, capture_output=True, text=True, timeout=60)
    finally:
        server.kill()
        server.wait(timeout=10)
