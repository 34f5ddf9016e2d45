"""The OpenCode engine's socket beside a hostile local user: with XDG_RUNTIME_DIR unset it lives in
`/tmp/ctxmill-<uid>/`, which another user may create first. The engine refuses a folder it does
not own, never opens its lock through a link, and the plugin never talks to a socket that is not
this user's. Another user is simulated by chown-ing to uid 65534 (needs root; skipped otherwise)."""

from __future__ import annotations

import json
import os
import shutil
import socketserver
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from ctxmill.engine.server import default_socket
from ground.files import private_dir

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "ctxmill" / "opencode_plugin" / "ctxmill.js"
OTHER_UID = 65534
as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another uid needs root")


def _engine(sock: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-m", "ctxmill", "engine", "--socket", str(sock), "--idle-minutes", "0.01"],
                          env=env, capture_output=True, text=True, timeout=60)


def test_without_a_runtime_dir_the_socket_is_in_a_per_user_tmp_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("CTXMILL_ENGINE_SOCKET", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert default_socket() == tmp_path / f"ctxmill-{os.getuid()}" / "engine.sock"


@as_root
def test_a_runtime_folder_another_user_created_first_is_refused(tmp_path):
    folder = tmp_path / f"ctxmill-{os.getuid()}"
    folder.mkdir(mode=0o777)
    os.chown(folder, OTHER_UID, OTHER_UID)
    with pytest.raises(PermissionError, match="uid 65534"):
        private_dir(folder, runtime=True)
    done = _engine(folder / "engine.sock", tmp_path)
    assert done.returncode == 1 and "uid 65534" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (folder / "engine.sock").exists() and not (folder / "engine.sock.lock").exists()


def test_a_runtime_folder_that_is_a_link_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "ctxmill-0").symlink_to(elsewhere)
    with pytest.raises(OSError, match="symbolic link"):
        private_dir(tmp_path / "ctxmill-0", runtime=True)
    assert _engine(tmp_path / "ctxmill-0" / "engine.sock", tmp_path).returncode == 1
    assert list(elsewhere.iterdir()) == []


def test_our_own_runtime_folder_is_made_0700(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    private_dir(folder, runtime=True)
    assert oct(folder.stat().st_mode & 0o777) == "0o700"


def test_the_lock_file_is_never_opened_through_a_link(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("the victim's secrets\n")
    os.chmod(victim, 0o600)
    (folder / "engine.sock.lock").symlink_to(victim)
    done = _engine(folder / "engine.sock", tmp_path)
    assert done.returncode == 1 and "engine.sock.lock" in done.stderr
    assert victim.read_text() == "the victim's secrets\n"  # main truncated it: open(lock, "w")


class _Recorder(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, owner: int | None) -> None:
        self.owner, self.requests = owner, []
        super().__init__(path, _Answer)

    def server_bind(self) -> None:
        super().server_bind()
        if self.owner is not None:  # the socket file belongs to the other user
            os.chown(self.server_address, self.owner, self.owner)


class _Answer(BaseHTTPRequestHandler):
    """An impostor engine: healthy, and answers every transform with an injected text."""

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
await hooks["experimental.chat.messages.transform"]({}, output)
console.log(JSON.stringify(output.messages[0].parts[0].text))
process.exit(0)
"""


def _plugin_turn(sock: Path, tmp_path: Path, owner: int | None = None) -> tuple[str, list[str]]:
    """One transform through the real plugin against the impostor on `sock` (its socket file
    chown-ed to `owner`): the text the model would see, and the requests the impostor received."""
    server = _Recorder(str(sock), owner)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {**os.environ, "CTXMILL_ENGINE_SOCKET": str(sock), "CTXMILL_BIN": shutil.which("false") or "false",
               "CTXMILL_PLUGIN_TIMEOUT_MS": "1500", "CTXMILL_PLUGIN_LOG": str(tmp_path / "plugin.log")}
        done = subprocess.run(["node", "--input-type=module", "-e", NODE_SCRIPT, str(PLUGIN)], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1]), server.requests
    finally:
        server.shutdown()
        server.server_close()


needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@needs_node
def test_the_plugin_uses_this_users_engine(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    text, requests = _plugin_turn(folder / "engine.sock", tmp_path)
    assert text == "INJECTED" and "/opencode/transform" in requests  # the check below is not vacuous


@needs_node
@as_root
@pytest.mark.parametrize("whose", ["folder", "socket"])
def test_the_plugin_never_talks_to_another_users_engine(tmp_path, whose):
    folder = tmp_path / "run"
    folder.mkdir(mode=0o755)
    if whose == "folder":
        os.chown(folder, OTHER_UID, OTHER_UID)
    text, requests = _plugin_turn(folder / "engine.sock", tmp_path, OTHER_UID if whose == "socket" else None)
    assert text == "hello" and requests == []
    assert "refused" in (tmp_path / "plugin.log").read_text()


@needs_node
def test_the_plugin_refuses_a_folder_others_can_write(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    os.chmod(folder, 0o777)
    text, requests = _plugin_turn(folder / "engine.sock", tmp_path)
    assert text == "hello" and requests == []
