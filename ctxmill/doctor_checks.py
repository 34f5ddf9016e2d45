"""What `ctxmill doctor` runs for real: each installed hook, MCP server and the OpenCode engine.

Every check runs the command exactly as the host would (from the installed settings), with
`CTXMILL_HOME` pointed at a scratch folder so nothing of the project changes, and says what it
saw: `(name, problem or None)`. A check never raises.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ctxmill.hooks import EVENTS

TRANSCRIPT = [
    {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "doctor",
     "message": {"role": "user", "content": "ctxmill doctor: check the checkpoint hook"}},
    {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "doctor",
     "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Checked."}]}},
]
MARKER_INPUT = {"file_path": "x.py", "content": '[ctxmill: kept 1 of 9 lines · deep_expand("' + "0" * 32 + '")]'}


def _env(scratch: Path) -> dict[str, str]:
    """The checks' environment: a scratch project and global home, and the always-on proxy left as
    it is (it has a check of its own: `ctxmill.always_on.status`)."""
    from ctxmill.always_on import AUTOSTART_ENV

    return {**os.environ, "CTXMILL_HOME": str(scratch / "home"), "XDG_DATA_HOME": str(scratch / "data"),
            AUTOSTART_ENV: "0", "PATH": host_path()}


def host_path() -> str:
    """PATH as a host started outside this shell sees it: without the activated virtual
    environment's `bin` (a hook that finds `ctxmill` only through it fails in the host with 127)."""
    venv = os.environ.get("VIRTUAL_ENV")
    parts = os.environ.get("PATH", os.defpath).split(os.pathsep)
    if venv:
        drop = {os.path.normpath(os.path.join(venv, d)) for d in ("bin", "Scripts")}
        parts = [p for p in parts if os.path.normpath(p) not in drop]
    return os.pathsep.join(parts)


def _event(name: str, scratch: Path) -> dict:
    transcript = scratch / "transcript.jsonl"
    if not transcript.exists():
        transcript.write_text("".join(json.dumps(x) + "\n" for x in TRANSCRIPT))
    event = {"session_id": "ctxmill-doctor", "transcript_path": str(transcript), "cwd": str(scratch),
             "hook_event_name": name}
    extra: dict[str, dict[str, object]] = {"SessionStart": {"source": "startup"}, "UserPromptSubmit": {"prompt": "ctxmill doctor check"},
             "PreToolUse": {"tool_name": "Write", "tool_input": MARKER_INPUT}, "PreCompact": {"trigger": "manual"},
             "SessionEnd": {"reason": "other"}, "Stop": {}}
    return {**event, **extra[name]}


def _expect(name: str, stdout: str, scratch: Path) -> str | None:
    """What is wrong with a hook's answer (None: as it should be)."""
    out = json.loads(stdout) if stdout.strip() else None
    specific = (out or {}).get("hookSpecificOutput", {}) if isinstance(out, dict) else {}
    if name == "SessionStart" and "deep_expand" not in specific.get("additionalContext", ""):
        return "injected no context"
    if name == "PreToolUse" and specific.get("permissionDecision") != "deny":
        return "did not deny an input that carries a ctxmill placeholder"
    if name in ("PreCompact", "SessionEnd") and not (scratch / "home" / "checkpoint.md").exists():
        return "wrote no checkpoint"
    return None


def run_hooks(hooks: dict[str, str], timeouts: dict[str, int]) -> Iterator[tuple[str, str | None]]:
    """Run each installed hook command through the shell, as Claude Code does; each result as it comes."""
    with tempfile.TemporaryDirectory(prefix="ctxmill-doctor-") as tmp:
        scratch = Path(tmp)
        for name in EVENTS:
            command = hooks.get(name)
            if command is None:
                yield f"hook {name}", "not installed"
                continue
            started = time.perf_counter()
            try:
                proc = subprocess.run(["sh", "-c", command], input=json.dumps(_event(name, scratch)), text=True,
                                      capture_output=True, env=_env(scratch), cwd=scratch,
                                      timeout=timeouts.get(name, 60))
                ms = (time.perf_counter() - started) * 1000
                problem: str | None
                if proc.returncode == 127:
                    problem = (f"`{command}` exited 127 (command not found outside this shell's virtual "
                               "environment): the host would fail every hook; run `ctxmill install` again to "
                               "write the absolute path of this installation")
                elif proc.returncode != 0:
                    problem = f"`{command}` exited {proc.returncode}: {(proc.stderr.strip() or proc.stdout.strip())[-200:]}"
                else:
                    problem = _expect(name, proc.stdout, scratch)
                    problem = f"`{command}` {problem}" if problem else None
                yield f"hook {name} runs ({ms:.0f} ms)", problem
            except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
                yield f"hook {name}", f"`{command}`: {type(exc).__name__}: {exc}"


def run_mcp(command: list[str] | None, timeout: float = 30.0) -> tuple[str, str | None]:
    """Start the installed MCP server, list its tools and expand an unknown key."""
    if not command:
        return "MCP server", "not registered"
    import asyncio

    async def talk() -> set[str]:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        with tempfile.TemporaryDirectory(prefix="ctxmill-doctor-") as tmp:
            params = StdioServerParameters(command=command[0], args=command[1:], env=_env(Path(tmp)), cwd=tmp)
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return {t.name for t in (await session.list_tools()).tools}

    started = time.perf_counter()
    try:
        names = asyncio.run(asyncio.wait_for(talk(), timeout))
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        return "MCP server", f"`{shlex.join(command)}` did not answer MCP: {type(exc).__name__}: {exc}"[:300]
    ms = (time.perf_counter() - started) * 1000
    missing = {"deep_expand", "memory_search", "memory_store"} - names
    return (f"MCP server answers ({ms:.0f} ms, {len(names)} tools)",
            f"`{shlex.join(command)}` lacks the tools {sorted(missing)}" if missing else None)


def run_engine(command: list[str], timeout: float = 30.0) -> tuple[str, str | None]:
    """Start the engine the OpenCode plugin would start, ask its health and one transform."""
    import http.client
    import socket

    class UnixConnection(http.client.HTTPConnection):
        def __init__(self, path: str) -> None:
            super().__init__("localhost", timeout=timeout)
            self.path = path

        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(self.path)

    with tempfile.TemporaryDirectory(prefix="ctxmill-doctor-") as tmp:
        sock = Path(tmp) / "engine.sock"
        started = time.perf_counter()
        try:
            proc = subprocess.Popen([*command, "engine", "--socket", str(sock), "--idle-minutes", "1"],
                                    env=_env(Path(tmp)), cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except OSError as exc:
            return "OpenCode engine", f"`{shlex.join(command)} engine` cannot start: {exc}"
        try:
            deadline = time.monotonic() + timeout
            while not sock.exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            conn = UnixConnection(str(sock))
            body = {"directory": tmp, "sessionID": "doctor", "messages": [
                {"id": "m", "role": "user", "parts": [{"type": "text", "text": "ctxmill doctor"}]}]}
            conn.request("POST", "/opencode/transform", json.dumps(body), {"content-type": "application/json"})
            answer = json.loads(conn.getresponse().read())
            if not isinstance(answer.get("edits"), list) or answer.get("error"):
                return "OpenCode engine", f"transform failed: {answer}"
            return f"OpenCode engine answers ({(time.perf_counter() - started) * 1000:.0f} ms)", None
        except Exception as exc:  # noqa: BLE001 - reported, never raised
            err = proc.stderr.read().decode(errors="replace")[-300:] if proc.poll() is not None and proc.stderr else ""
            return "OpenCode engine", f"`{shlex.join(command)} engine`: {type(exc).__name__}: {exc} {err}".strip()
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
