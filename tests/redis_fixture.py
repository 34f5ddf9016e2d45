"""A real `redis-server` on a loopback port the tests choose (Debian package `redis-server`).

`redis_server` (session scope) starts one server for the whole run, without persistence; tests
isolate themselves by key prefix (`fresh_address`). It skips, saying why, only where the
server binary or the `redis` client package is missing. `RedisServer.stop()` / `start()` let a
test take Redis away mid-run and bring it back on the same port.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from ground.redis_client import StoreAddress


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self, binary: str, folder: Path) -> None:
        self.binary, self.folder = binary, folder
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder), "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer on port {self.port} within 10 s")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
            self.process = None


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    pytest.importorskip("redis", reason="the redis client is not installed (pip install -e '.[test]')")
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install -y redis-server)")
    server = RedisServer(binary, tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


TEST_KEY = b"tests-store-key-0123456789abcdef"
"""The store key the tests' ctxmill processes sign with (CTXMILL_STORE_KEY in their environment)."""


def fresh_address(server: RedisServer) -> StoreAddress:
    """An address on `server` with a key prefix no other test uses, signed with `TEST_KEY`."""
    return StoreAddress.parse(f"{server.url}?prefix=t{uuid.uuid4().hex[:12]}:").with_key(TEST_KEY)
