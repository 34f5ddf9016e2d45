"""`ctxmill run [--port N] [--home DIR] [--attach] -- COMMAND [ARGS…]`, e.g. `ctxmill run -- claude`.

Starts a proxy of its own for COMMAND and runs COMMAND with ANTHROPIC_BASE_URL and OPENAI_BASE_URL
pointing at it; stops the proxy when COMMAND exits, and exits with COMMAND's exit code.
- Home: `--home`, else the project's (`.ctxmill/` of the working directory's project).
- Port: `--port` when given (an error if taken), else 8787, else a free one when 8787 is taken by
  anything else: it never attaches to whatever listens (`--attach` uses the ctxmill proxy already
  answering on `--port` instead, only when this user's process listens there, `ctxmill.channel`:
  another user's server on the port would receive the API key).
- Upstream: `--upstream-anthropic` / `--upstream-openai`, else where the command would have gone
  without ctxmill (ANTHROPIC_BASE_URL, OPENAI_BASE_URL without its `/v1`), else the providers' APIs.
- Codex reads neither base URL: `ctxmill run -- codex …` adds `-c` overrides that select a model
  provider `ctxmill` whose base_url is the proxy, speaking the Responses API over HTTP (the built-in
  provider would first try websockets the proxy does not carry), authenticated with OPENAI_API_KEY
  when it is set, else with Codex's own login (`codex login --with-api-key` or CODEX_API_KEY; a
  ChatGPT sign-in talks to chatgpt.com, not to the API the proxy forwards to).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from ctxmill import channel
from ctxmill.always_on import port_is_free as _free
from ctxmill.proxy_config import DEFAULT_PORT

HOST = "127.0.0.1"
START_TIMEOUT = 30.0
CODEX_PROVIDER = "ctxmill"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a command (e.g. claude) through a proxy of its own",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, help=f"proxy port (default {DEFAULT_PORT}, or a free one when it is taken)")
    p.add_argument("--home", type=Path, metavar="DIR", help="ctxmill home of the proxy (default: the project's)")
    p.add_argument("--attach", action="store_true", help="use the ctxmill proxy already running on --port")
    p.add_argument("--upstream-anthropic", metavar="URL", help="Anthropic API origin (default $ANTHROPIC_BASE_URL)")
    p.add_argument("--upstream-openai", metavar="URL", help="OpenAI API origin (default $OPENAI_BASE_URL without /v1)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="COMMAND", help="the command and its arguments")
    p.set_defaults(func=run)


def _saved_line(port: int) -> str:
    """What the proxy this run started did, in one line (said before it is stopped)."""
    from ctxmill.commands.proxy import fetch_stats
    from ctxmill.errors import CliError

    try:
        totals = fetch_stats(HOST, port)["totals"]
    except (CliError, KeyError, TypeError):
        return "ctxmill: the proxy's figures could not be read; `ctxmill stats` has what it recorded"
    before, after = totals.get("tokens_before", 0), totals.get("tokens_after", 0)
    saved = f" ({100 * (after - before) / before:+.1f}%)" if before else ""
    count = totals.get("requests", 0)
    return (f"ctxmill: {count:,} request{'' if count == 1 else 's'} through the proxy, {before:,} → {after:,} "
            f"tokens{saved}; `ctxmill stats` for the cost")


def _answers(port: int, pid: int | None = None) -> bool:
    """A ctxmill proxy of this user answers on `port` (with `pid`: the one that process serves,
    not another run's that took the port first)."""
    from ctxmill.commands.proxy import fetch_stats
    from ctxmill.errors import CliError

    try:
        stats = fetch_stats(HOST, port)
    except CliError:
        return False
    return (pid is None or stats.get("pid") == pid) and channel.problem(port) is None


def _pick_port(wanted: int | None) -> int:
    from ctxmill.errors import CliError

    if wanted is not None:
        if not _free(wanted):
            raise CliError(f"port {wanted} is taken (use another --port, or --attach to use the proxy there)")
        return wanted
    return DEFAULT_PORT if _free(DEFAULT_PORT) else _free_port()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def upstreams(args: argparse.Namespace, environ: dict[str, str]) -> list[str]:
    """The proxy's upstream flags: where the command would have sent its requests itself."""
    out = []
    anthropic = args.upstream_anthropic or environ.get("ANTHROPIC_BASE_URL")
    if anthropic:
        out += ["--upstream-anthropic", anthropic.rstrip("/")]
    openai = args.upstream_openai or (environ.get("OPENAI_BASE_URL") or "").rstrip("/").removesuffix("/v1")
    if openai:
        out += ["--upstream-openai", openai]
    return out


def _start_proxy(port: int, home: Path, upstream: list[str]) -> subprocess.Popen:
    from ctxmill.errors import CliError

    args = [sys.executable, "-m", "ctxmill", "proxy", "--port", str(port), "--home", str(home),
            "--log-level", "warning", *upstream]
    proxy = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proxy.poll() is not None:
            reason = (proxy.stderr.read() if proxy.stderr else b"").decode(errors="replace").strip().splitlines()
            raise CliError(f"the proxy did not start: {reason[-1] if reason else f'exit {proxy.returncode}'}")
        if _answers(port, proxy.pid):
            return proxy
        time.sleep(0.1)
    proxy.terminate()
    raise CliError(f"the proxy did not answer on {HOST}:{port} within {START_TIMEOUT:.0f} s")


def codex_overrides(url: str, env: Mapping[str, str]) -> list[str]:
    """Codex `-c` flags that send its model requests through the proxy at `url` (`/v1` appended).
    A custom provider reads no key by itself: `env_key` names OPENAI_API_KEY when `env` has it,
    else `requires_openai_auth` uses Codex's login (which ignores OPENAI_API_KEY)."""
    auth = 'env_key = "OPENAI_API_KEY"' if env.get("OPENAI_API_KEY") else "requires_openai_auth = true"
    provider = f'{{name = "ctxmill", base_url = "{url}/v1", wire_api = "responses", {auth}}}'
    return ["-c", f'model_provider="{CODEX_PROVIDER}"', "-c", f"model_providers.{CODEX_PROVIDER}={provider}"]


def through_proxy(command: list[str], url: str, env: Mapping[str, str]) -> list[str]:
    """The command with the flags its client needs to use the proxy (Codex: `codex_overrides`,
    before its subcommand, where they apply to every subcommand; Claude Code: `--settings` whose
    `env` wins over the ANTHROPIC_BASE_URL of its settings files, which always-on compression and
    gateways set there and which would win over this process's environment)."""
    if Path(command[0]).name == "codex":
        return [command[0], *codex_overrides(url, env), *command[1:]]
    if Path(command[0]).name == "claude":
        import json

        return [command[0], "--settings", json.dumps({"env": {"ANTHROPIC_BASE_URL": url}}), *command[1:]]
    return command


def run(args: argparse.Namespace) -> int:
    from ctxmill.commands.proxy import base_url
    from ctxmill.errors import CliError
    from ctxmill.paths import project_home

    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not command:
        raise CliError("name the command to run, e.g. `ctxmill run -- claude`")
    if args.attach:
        port = args.port or DEFAULT_PORT
        if why := channel.problem(port):
            raise CliError(f"not attaching to {HOST}:{port}: {why}")
        if not _answers(port):
            raise CliError(f"no ctxmill proxy answers on {HOST}:{port} to attach to")
        started = None
    else:
        from ctxmill.settings import Settings

        home = args.home or project_home()
        Settings.load(home)  # what the project's config may not set is said here, on the terminal
        port = _pick_port(args.port)
        for attempt in range(3):
            try:
                started = _start_proxy(port, home, upstreams(args, dict(os.environ)))
                break
            except CliError as exc:  # another process took the port since it was picked: take a free one
                if args.port is not None or "address already in use" not in str(exc) or attempt == 2:
                    raise
                port = _free_port()
    url = base_url(HOST, port)
    env = {**os.environ, "ANTHROPIC_BASE_URL": url, "OPENAI_BASE_URL": f"{url}/v1"}
    try:
        return subprocess.call(through_proxy(command, url, env), env=env)
    except FileNotFoundError:
        raise CliError(f"command not found: {command[0]}") from None
    finally:
        if started is not None:
            print(_saved_line(port), file=sys.stderr)
            started.terminate()
            try:
                started.wait(timeout=10)
            except subprocess.TimeoutExpired:
                started.kill()
