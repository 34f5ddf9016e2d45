"""`ctxmill doctor`: check each client's installation for real, the token counter and the stores.

Per client (Claude Code, Codex, OpenCode) and scope where ctxmill is installed: the files, then each
installed hook run as the host runs it, the MCP server started and asked for its tools, and (for
OpenCode) the engine the plugin starts (`ctxmill.doctor_checks`; a scratch home, so nothing of the
project changes). Prints one line per check as soon as it has run (ok / problem: what is wrong and
how to fix it), so a slow check never leaves the terminal silent; exit 1
if any failed. A client installed in neither scope is one problem line saying how to install it.
Then whether always-on compression is on and its proxy answers (`ctxmill.always_on.status`).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator


def register(subparsers) -> None:
    parser = subparsers.add_parser("doctor", help="check the installation and say how to fix what is wrong")
    parser.set_defaults(func=run)


def _writable(path) -> str | None:
    import tempfile

    try:
        from ground.files import private_dir

        private_dir(path)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        return f"{path} is not writable ({exc.strerror or exc}): fix its permissions or set CTXMILL_HOME"
    return None


def _claude_code(root, home) -> Iterator[tuple[str, str | None]]:
    from ctxmill import doctor_checks
    from ctxmill.install import claude_code

    for scope, target in _claude_code_targets(root, home).items():
        problems = claude_code.claude_code_status(target, _proxy_url("claude-code") if scope == "user" else None)
        name = f"Claude Code ({scope} scope)"
        yield (f"{name}: files", "; ".join(problems) + " - re-run `ctxmill install claude-code"
               + (" --project`" if scope == "project" else "`") if problems else None)
        for n, p in doctor_checks.run_hooks(claude_code.installed_hooks(target), claude_code.HOOK_TIMEOUTS):
            yield f"{name}: {n}", p
        n, p = doctor_checks.run_mcp(claude_code.installed_mcp(target))
        yield f"{name}: {n}", p


def _claude_code_targets(root, home) -> dict:
    """Scope -> target, of the scopes where ctxmill is installed for Claude Code."""
    from ctxmill.install import claude_code
    from ctxmill.paths import global_home

    targets = {"user": claude_code.ClaudeCodeTarget.for_scope("user", root, global_home()),
               "project": claude_code.ClaudeCodeTarget.for_scope("project", root, home)}
    return {scope: t for scope, t in targets.items()
            if claude_code.installed_hooks(t) or claude_code.installed_mcp(t) is not None}


def _proxy_url(client: str) -> str | None:
    """The always-on proxy's URL when `client` is set up to use it."""
    from ctxmill import always_on
    from ctxmill.paths import global_home

    state = always_on.read_state(global_home())
    return always_on.url(state["port"]) if state and client in state["clients"] else None


def _codex_targets(root, home) -> dict:  # the clients' common signature
    """{"user": target} when ctxmill is installed for Codex (user scope only)."""
    from ctxmill.install import codex
    from ctxmill.paths import global_home

    target = codex.CodexTarget.for_user(global_home())
    return {"user": target} if codex.installed_mcp(target) is not None else {}


def _codex(root, home) -> Iterator[tuple[str, str | None]]:
    from ctxmill import doctor_checks
    from ctxmill.install import codex

    for target in _codex_targets(root, home).values():
        problems = codex.codex_status(target, _proxy_url("codex"))
        yield ("Codex (user scope): files", "; ".join(problems) + " - re-run `ctxmill install codex`" if problems
               else None)
        n, p = doctor_checks.run_mcp(codex.installed_mcp(target))
        yield f"Codex (user scope): {n}", p


def _opencode(root, home) -> Iterator[tuple[str, str | None]]:
    import json

    from ctxmill import doctor_checks
    from ctxmill.install import opencode

    for scope, target in _opencode_targets(root, home).items():
        problems = opencode.opencode_status(target)
        name = f"OpenCode ({scope} scope)"
        yield (f"{name}: files", "; ".join(problems) + " - re-run `ctxmill install opencode"
               + (" --project`" if scope == "project" else "`") if problems else None)
        n, p = doctor_checks.run_mcp(opencode.installed_mcp(target))
        yield f"{name}: {n}", p
        try:
            sidecar = target.plugin.with_name(opencode.COMMAND_FILE)
            command = json.loads(sidecar.read_text())["command"] if sidecar.exists() else ["ctxmill"]
        except (OSError, ValueError, KeyError):
            command = ["ctxmill"]
        n, p = doctor_checks.run_engine(command)
        yield f"{name}: {n}", p


def _history() -> tuple[str, str | None]:
    """How full the history store is, against its budget (`[history] max_mb`)."""
    from ctxmill.errors import ConfigError
    from ctxmill.settings import Settings
    from memory.history.store import HistoryError, HistoryStore

    try:
        cfg = Settings.load().history
        if not cfg.enabled:
            return "history: turned off ([history] enabled = false)", None
        with HistoryStore.open(cfg) as store:
            stats = store.stats()
    except (HistoryError, ConfigError, OSError, ValueError) as exc:
        return "history", f"{exc} - move the file away; it is rebuilt from new sessions and `ctxmill import`"
    line = (f"history: {stats['sessions']} sessions, {stats['bytes'] / 2**20:.1f} of {stats['max_bytes'] / 2**20:.0f} MB"
            f" ({stats['path']})")
    over = stats["bytes"] > stats["max_bytes"]
    return line, "over its budget: the next ingest evicts the oldest sessions" if over else None


def _opencode_targets(root, home) -> dict:
    """Scope -> target, of the scopes where ctxmill is installed for OpenCode."""
    from ctxmill.install import opencode
    from ctxmill.paths import global_home

    targets = {"user": opencode.OpenCodeTarget.for_scope("user", root, global_home()),
               "project": opencode.OpenCodeTarget.for_scope("project", root, home)}
    return {scope: t for scope, t in targets.items()
            if t.plugin.exists() or opencode.installed_mcp(t) is not None}


def memory_fullness(injection) -> tuple[str, str | None]:
    """How full the session-start memory budget is (memory.inject.Injection); a problem only when
    the pinned entries alone are over it (they are injected anyway)."""
    share = f" ({injection.chars / injection.budget:.0%})" if injection.budget else ""
    name = (f"memory at session start: {len(injection.lines)} of {injection.entries} entries "
            f"({injection.pinned} pinned), {injection.chars:,} of {injection.budget:,} chars{share}")
    if injection.left_out:
        name += f"; {injection.left_out} searchable only"
    pinned_chars = sum(len(line) + 1 for line in injection.lines[: injection.pinned])
    if pinned_chars > injection.budget:
        return name, (f"pinned entries alone take {pinned_chars:,} chars: unpin some (`ctxmill memory list`) "
                      "or raise `inject_chars` under [memory] in config.toml")
    return name, None


def _memory_budget() -> tuple[str, str | None]:
    try:
        from ctxmill.settings import Settings
        from memory.inject import select

        return memory_fullness(select(Settings.load().memory))
    except Exception as exc:  # noqa: BLE001 - report, never crash the doctor
        return "memory at session start", f"{type(exc).__name__}: {exc}"


def checks() -> Iterator[tuple[str, str | None]]:
    """(name, problem or None), each as soon as its check has run."""
    from ctxmill.paths import global_home, project_home, project_root, user_ccr_dir

    home, root = project_home(), project_root()
    clients = [("Claude Code", "claude-code", _claude_code_targets, _claude_code),
               ("Codex", "codex", _codex_targets, _codex),
               ("OpenCode", "opencode", _opencode_targets, _opencode)]
    installed = {name for name, _, targets, _ in clients if targets(root, home)}
    for name, command, _, run_checks in clients:
        if name in installed:
            yield from run_checks(root, home)
        elif installed:  # one client is enough: name the other, no problem
            yield f"{name}: not installed (run `ctxmill install {command}`{_scopes(command)})", None
        else:
            yield name, f"ctxmill is not installed - run `ctxmill install {command}`{_scopes(command)}"
    from ctxmill import always_on

    yield always_on.status(global_home())
    if (deferrals := _deferrals(global_home())) is not None:
        yield deferrals
    try:
        from compress.token_counters import exact_counter
        from ctxmill.settings import tiktoken_cache

        exact = exact_counter(tiktoken_cache())
        kind = "exact o200k" if exact else "fast estimate (`pip install ctxmill[exact]` for exact counts)"
        yield f"token counter in use: {kind}", None
    except Exception as exc:  # noqa: BLE001 - report, never crash the doctor
        yield "token counter", f"{type(exc).__name__}: {exc}"
    for name, path in (("project home", home), ("CCR store", user_ccr_dir()), ("global memory", global_home())):
        yield f"{name} writable ({path})", _writable(path)
    yield _history()
    yield _memory_budget()
    try:
        import mcp  # noqa: F401

        yield "mcp SDK importable", None
    except ImportError:
        yield "mcp SDK", "not installed - `pip install mcp` (the MCP server needs it)"


DEFERRED_SHARE_LIMIT = 0.05
"""More of the always-on proxy's requests than this sent uncompressed past its latency budget is a problem."""


def _deferrals(global_home) -> tuple[str, str | None] | None:
    """The always-on proxy's share of requests sent as they were past its latency budget (None
    when it is not running)."""
    from ctxmill import always_on
    from ctxmill.commands.proxy import fetch_stats
    from ctxmill.errors import CliError

    state = always_on.read_state(global_home)
    if state is None or always_on.serving_pid(state["port"]) is None:
        return None
    try:
        totals = fetch_stats("127.0.0.1", state["port"])["totals"]
    except (CliError, KeyError, TypeError):
        return None
    share, requests = totals.get("deferred_share", 0.0), totals.get("requests", 0)
    name = (f"latency budget: {totals.get('deferred', 0):,} of {requests:,} requests sent uncompressed "
            f"({100 * share:.1f}%)")
    if requests >= 20 and share > DEFERRED_SHARE_LIMIT:
        behind = totals.get("deferred_behind", 0)
        if 2 * behind > totals.get("deferred", 0):
            return name, (f"more than 5%, {behind:,} of them because their worker was busy with other sessions' "
                          f"runs: raise --workers (up to the cores) or [proxy] latency_budget_ms")
        return name, ("more than 5% - the machine is busy or the budget is tight: raise [proxy] latency_budget_ms "
                      "or --workers")
    return name, None


def _scopes(command: str) -> str:
    return "" if command == "codex" else " (or --project)"


def run(args: argparse.Namespace) -> int:
    failed = 0
    for name, problem in checks():
        print(f"ok       {name}" if problem is None else f"problem  {name}: {problem}", flush=True)
        failed += problem is not None
    return 1 if failed else 0
