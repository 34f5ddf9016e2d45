"""Shared by tests/trust/ and bench/adversarial.py's local-trust faces: an impostor engine on a
Unix socket with a real plugin turn against it, ctxmill run as a hook or an install in a given
user home, another local user (uid 65534, needs root), and that user squatting a loopback port
(`Squatter`: it binds the port as soon as it can and records the keys of what it is sent)."""

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

    def do_GET(self) -> None:  # http.server's name
        self.server.requests.append(self.path)
        self._reply({"ok": True})

    def do_POST(self) -> None:
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


SQUATTER = """
import os, socket, sys, time
port, seconds = int(sys.argv[1]), float(sys.argv[2])
os.setuid(int(sys.argv[3]))
deadline, tries, sock = time.monotonic() + seconds, 0, None
print("READY", flush=True)
while sock is None and time.monotonic() < deadline:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
        s.listen(64)
        sock = s
    except OSError:
        s.close()
        tries += 1
        time.sleep(0.001)  # a thousand tries a second: well inside any pause, and one core left to the rest
print(f"TRIED {tries}", flush=True)
if sock is None:
    sys.exit(0)
print("BOUND", flush=True)
sock.settimeout(0.2)
while time.monotonic() < deadline + 60:
    try:
        conn, _ = sock.accept()
    except OSError:
        continue
    conn.settimeout(5)
    head = b""
    try:
        while b"\\r\\n\\r\\n" not in head and len(head) < 1 << 20:
            chunk = conn.recv(65536)
            if not chunk:
                break
            head += chunk
    except OSError:
        pass
    keys = [line.split(b":", 1)[1].strip().decode("latin-1") for line in head.split(b"\\r\\n")
            if line.lower().startswith((b"authorization:", b"x-api-key:"))]
    if head:  # a bare connect (a check that something listens) sends nothing
        print("GOT " + (head.split(b" ", 2)[1].decode("latin-1") if head.count(b" ") >= 2 else "?") + " "
              + " ".join(keys), flush=True)
    try:
        conn.sendall(b"HTTP/1.1 500 Internal Server Error\\r\\ncontent-length: 0\\r\\nconnection: close\\r\\n\\r\\n")
    except OSError:
        pass
    conn.close()
"""


class Squatter:
    """Another user (uid `uid`) trying to bind 127.0.0.1:`port` in a loop for `seconds`, and, once it
    holds it, recording the keys of every request it gets (and answering 500). `bound`: it got the
    port; `got`: the requests' "PATH KEY…" lines; `tried`: its failed binds."""

    def __init__(self, port: int, seconds: float, uid: int = OTHER_UID) -> None:
        python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        self.lines: list[str] = []
        self.proc = subprocess.Popen([python, "-c", SQUATTER, str(port), str(seconds), str(uid)],
                                     stdout=subprocess.PIPE, text=True, cwd="/")
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 30
        while "READY" not in self.lines and time.monotonic() < deadline:
            time.sleep(0.01)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())

    def wait_bound_or_done(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.bound and not any(x.startswith("TRIED") for x in self.lines) and time.monotonic() < deadline:
            time.sleep(0.01)

    @property
    def bound(self) -> bool:
        return "BOUND" in self.lines

    @property
    def got(self) -> list[str]:
        return [x[4:] for x in self.lines if x.startswith("GOT ")]

    @property
    def tried(self) -> int:
        return next((int(x.split()[1]) for x in self.lines if x.startswith("TRIED")), 0)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
        self._reader.join(5)

    def __enter__(self) -> Squatter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
