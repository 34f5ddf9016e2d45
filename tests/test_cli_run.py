"""`ctxmill run -- COMMAND`: starts the proxy when none answers, points the command at it, stops it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from tests.conftest import REPO

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


def test_run_without_a_command_is_a_usage_error(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "ctxmill", "run"], env=env, capture_output=True, timeout=30)
    assert done.returncode == 2 and b"name the command" in done.stderr
