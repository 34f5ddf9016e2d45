"""What the scenarios need to run through ctxmill: its command on PATH, the turns that expand a
marker and store a memory, and the record of tokens sent raw vs through ctxmill.

`with_ctxmill(scenario, expand_tool, memory_tool)` appends two turns before the final one: the
model calls the client's own tool to expand the first ctxmill marker it was shown (computed from
the request: no marker, no call, and the test fails on the missing result), then stores a memory.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from tests.e2e.scenarios import Scenario
from tests.e2e.standin import Call, Turn
from tests.redis_fixture import free_port

MARKER = re.compile(r'deep_expand\(\\*"([0-9a-f]{32})\\*"')
MEMORY = "Keep add() pure: the build checks that add(2, 3) == 5."
BIN = Path(sys.executable).parent
REPORT_ENV = "CTXMILL_E2E_RESULTS"
"""A JSON file to keep each client's numbers in (docs/development.md's table); unset: none is written."""


def ctxmill_run(*command: str) -> list[str]:
    """`ctxmill run --port P -- COMMAND…` on a free port P: the default port (8787) may be held by
    anything on the machine, another test's proxy included."""
    return [sys.executable, "-m", "ctxmill", "run", "--port", str(free_port()), "--", *command]


def path_with_ctxmill(env: dict[str, str]) -> dict[str, str]:
    """`ctxmill` on PATH (this test run's installation), as a user who installed it has it."""
    return {**env, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}"}


def proxy_waits_for_compression(home: Path) -> None:
    """The proxy `ctxmill run` starts for the user whose HOME is `home` waits for every
    compression (`[proxy] latency_budget_ms = "none"` in the user's own config: a project's may not
    set it): which requests carry markers must not depend on how busy the machine is. The
    budget's fallback (a request sent as it came) is the proxy tests' subject."""
    config = home / ".local" / "share" / "ctxmill" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[proxy]\nlatency_budget_ms = "none"\n')


def run_codex_through(codex, home: Path, project: Path, url: str, prompt: str, model: str,
                      timeout: int) -> tuple[Any, dict[str, str]]:
    """`ctxmill run -- codex exec PROMPT` in `project` with `model`, Codex's provider the stand-in
    at `url` (from OPENAI_BASE_URL, which `run` forwards to): (the client's result, its env)."""
    from tests.e2e import clients

    chome = home.parent / "codex-home"
    chome.mkdir(exist_ok=True)
    (chome / "config.toml").write_text(f'model = "{model}"\napproval_policy = "never"\nsandbox_mode = "workspace-write"\n'
                                       "[analytics]\nenabled = false\n[feedback]\nenabled = false\n")
    env = path_with_ctxmill(clients.base_env(home, CODEX_HOME=str(chome), OPENAI_API_KEY="sk-e2e-standin",
                                             OPENAI_BASE_URL=f"{url}/v1"))
    cmd = ctxmill_run(str(codex.bin), "exec", "--skip-git-repo-check", "--color", "never", prompt)
    return clients.run(cmd, env=env, cwd=project, timeout=timeout), env


def markers(body) -> list[str]:
    return MARKER.findall(json.dumps(body))


def expand_turn(tool: str, arg: str = "key"):
    def turn(body: dict, index: int) -> Turn:
        keys = markers(body)
        if not keys:
            return Turn("There is no ctxmill marker to expand.")
        return Turn("Let me read the part ctxmill cut.", [Call(tool, {arg: keys[0]})])
    return turn


def with_ctxmill(scenario: Scenario, expand_tool: str, memory_tool: str, arg: str = "key") -> Scenario:
    final = scenario.script[-1]
    scenario.script[-1:] = [expand_turn(expand_tool, arg),
                            Turn("Saving the decision.", [Call(memory_tool, {"type": "decision", "text": MEMORY})]),
                            final]
    scenario.expected[len(scenario.script) - 2] = "Keep add() pure"
    return scenario


def record(client: str, **numbers) -> None:
    """Keep this run's numbers for docs/development.md in $CTXMILL_E2E_RESULTS, when it names a
    file (a test writes nothing else outside its temporary folders)."""
    if not os.environ.get(REPORT_ENV):
        return
    report = Path(os.environ[REPORT_ENV])
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError):
        data = {}
    data[client] = numbers
    report.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def stop_engine(sock: Path) -> None:
    """Stop the engine the plugin started on `sock` (by the pid it reports, never by name)."""
    import http.client
    import signal
    import socket

    class Conn(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(5)
            self.sock.connect(str(sock))

    try:
        conn = Conn("localhost", timeout=5)
        conn.request("GET", "/health")
        pid = json.loads(conn.getresponse().read())["pid"]
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, KeyError):
        pass


def memory_text(project: Path) -> str:
    home = project / ".ctxmill"
    return "".join(p.read_text() for p in (home / "MEMORY.md", home / "notes.md") if p.exists())


def unresolved(requests, env: dict[str, str], cwd: Path) -> list[str]:
    """The marker keys shown in `requests` that `ctxmill expand` cannot give back (empty: all do)."""
    import subprocess

    keys = sorted({k for r in requests for k in markers(r.body)})
    assert keys, "no request carried a ctxmill marker"
    return [k for k in keys if subprocess.run([sys.executable, "-m", "ctxmill", "expand", k], cwd=cwd, env=env,
                                              capture_output=True, timeout=60).returncode != 0]
