"""`ctxmill run [--port 8787] [--home DIR] -- COMMAND [ARGS…]`, e.g. `ctxmill run -- claude`.

Runs COMMAND with ANTHROPIC_BASE_URL and OPENAI_BASE_URL pointing at the ctxmill proxy on
127.0.0.1:PORT. Codex reads neither: `ctxmill run -- codex …` adds `-c` overrides that select a
model provider `ctxmill` whose base_url is the proxy, speaking the Responses API over HTTP (the
built-in provider would first try websockets the proxy does not carry) with Codex's own OpenAI
credentials (an API key; a ChatGPT sign-in talks to chatgpt.com, not to the API the proxy
forwards to). If no proxy answers there, one is started first and stopped when COMMAND exits.
Exits with COMMAND's exit code.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from ctxmill.settings import DEFAULT_PORT

HOST = "127.0.0.1"
START_TIMEOUT = 20.0
CODEX_PROVIDER = "ctxmill"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a command (e.g. claude) through the proxy, starting it if needed",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"proxy port (default {DEFAULT_PORT})")
    p.add_argument("--home", type=Path, metavar="DIR", help="ctxmill home for a proxy started here")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="COMMAND", help="the command and its arguments")
    p.set_defaults(func=run)


def _answers(port: int) -> bool:
    from ctxmill.errors import CliError
    from ctxmill.commands.proxy import fetch_stats

    try:
        fetch_stats(HOST, port)
        return True
    except CliError:
        return False


def _start_proxy(port: int, home: Path | None) -> subprocess.Popen:
    from ctxmill.errors import CliError

    args = [sys.executable, "-m", "ctxmill", "proxy", "--port", str(port), "--log-level", "warning"]
    if home:
        args += ["--home", str(home)]
    proxy = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proxy.poll() is not None:
            reason = (proxy.stderr.read() or b"").decode(errors="replace").strip().splitlines()
            raise CliError(f"the proxy did not start: {reason[-1] if reason else f'exit {proxy.returncode}'}")
        if _answers(port):
            return proxy
        time.sleep(0.1)
    proxy.terminate()
    raise CliError(f"the proxy did not answer on {HOST}:{port} within {START_TIMEOUT:.0f} s")


def codex_overrides(url: str) -> list[str]:
    """Codex `-c` flags that send its model requests through the proxy at `url` (`/v1` appended)."""
    provider = (f'{{name = "ctxmill", base_url = "{url}/v1", wire_api = "responses", '
                f'requires_openai_auth = true}}')
    return ["-c", f'model_provider="{CODEX_PROVIDER}"', "-c", f"model_providers.{CODEX_PROVIDER}={provider}"]


def through_proxy(command: list[str], url: str) -> list[str]:
    """The command with the flags its client needs to use the proxy (Codex: `codex_overrides`,
    before its subcommand, where they apply to every subcommand)."""
    if Path(command[0]).name == "codex":
        return [command[0], *codex_overrides(url), *command[1:]]
    return command


def run(args: argparse.Namespace) -> int:
    from ctxmill.errors import CliError
    from ctxmill.commands.proxy import base_url

    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not command:
        raise CliError("name the command to run, e.g. `ctxmill run -- claude`")
    started = None if _answers(args.port) else _start_proxy(args.port, args.home)
    url = base_url(HOST, args.port)
    env = {**os.environ, "ANTHROPIC_BASE_URL": url, "OPENAI_BASE_URL": f"{url}/v1"}
    try:
        return subprocess.call(through_proxy(command, url), env=env)
    except FileNotFoundError:
        raise CliError(f"command not found: {command[0]}") from None
    finally:
        if started is not None:
            started.terminate()
            try:
                started.wait(timeout=10)
            except subprocess.TimeoutExpired:
                started.kill()
