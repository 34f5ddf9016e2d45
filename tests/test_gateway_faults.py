"""`ctxmill proxy --store` as an operator meets it: it refuses to start with one line when its
store can never work, says where it logs (stderr, and `--log-file`), and leaves no worker behind
when its main process is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest

from ctxmill.proxy.identity import session_key
from ground.redis_client import connect
from tests.proxy_helpers import example
from tests.redis_fixture import free_port, fresh_address
from tests.test_gateway_replicas import requests_of

ROOT = Path(__file__).resolve().parents[1]


def _proxy(tmp_path: Path, *args: str, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "ctxmill", "proxy", "--port", str(port), "--home",
                                str(tmp_path / "home"), "--workers", "1", "--upstream-anthropic",
                                "http://127.0.0.1:9", *args], cwd=tmp_path, env={**os.environ, **(env or {})},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            httpx.get(url + "/ctxmill/stats", timeout=1)
            return process, url
        except httpx.HTTPError:
            time.sleep(0.2)
    raise AssertionError(f"the proxy did not start: {process.communicate(timeout=10)}")


def _stop(process: subprocess.Popen) -> str:
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    return err.decode()


def test_a_store_without_the_redis_package_stops_the_proxy_with_one_line(tmp_path):
    fake = tmp_path / "no-redis" / "redis"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ImportError("No module named \'redis\'")\n')
    r = subprocess.run([sys.executable, "-m", "ctxmill", "proxy", "--port", str(free_port()), "--store",
                        "redis://127.0.0.1:6379/0"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": f"{tmp_path / 'no-redis'}:{ROOT}"})
    assert r.returncode == 2
    assert r.stderr.splitlines() == [r.stderr.strip()] and "pip install 'ctxmill[gateway]'" in r.stderr
    assert "startup complete" not in r.stderr + r.stdout


def test_the_proxy_and_its_workers_log_to_stderr_and_the_log_file(tmp_path):
    dead = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    log_file = tmp_path / "proxy.log"
    process, url = _proxy(tmp_path, "--store", dead, "--log-file", str(log_file))
    try:
        httpx.post(url + "/v1/messages", content=orjson.dumps(requests_of(example())[0]), timeout=30,
                   headers={"content-type": "application/json", "x-api-key": "sk-test"})
    finally:
        err = _stop(process)
    assert "does not answer now" in err  # said at start: requests pass through until it answers
    assert "shared store failed" in err  # the worker's line, on stderr
    assert "shared store failed" in log_file.read_text()
    assert not (tmp_path / ".ctxmill" / "ctxmill.log").exists()  # nothing in the working directory


def _children(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    out.append(int(stat.parent.name))
                    todo.append(int(stat.parent.name))
            except (OSError, ValueError, IndexError):
                continue
    return out


def _running(pid: int) -> bool:
    """Alive and not a zombie (an exited process its new parent has not reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the workers through /proc")
def test_killing_the_proxy_ends_its_worker_even_in_the_middle_of_a_run(tmp_path, redis_server):
    address = fresh_address(redis_server)
    body = requests_of(example())[-1]
    lock = f"{address.prefix}session:proxy-{session_key('anthropic', body)}:lock"
    holder = connect(address)
    holder.set(lock, b"another-replica", px=60_000)  # the worker's run waits for it (12 s)
    process, url = _proxy(tmp_path, "--store", f"{redis_server.url}?prefix={address.prefix}")
    workers = _children(process.pid)
    try:
        httpx.post(url + "/v1/messages", content=orjson.dumps(body), timeout=30,  # the run goes on, waiting
                   headers={"content-type": "application/json", "x-api-key": "sk-test"})
        time.sleep(0.5)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
        deadline = time.monotonic() + 8  # well before the lock wait (12 s) would have ended the run
        while time.monotonic() < deadline and any(map(_running, workers)):
            time.sleep(0.1)
        assert not [p for p in workers if _running(p)]
    finally:
        holder.delete(lock)
        holder.close()
        for p in workers:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
