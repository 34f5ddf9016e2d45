"""`ctxmill doctor`: check each client's installation for real, the token counter and the stores.

Per client (Claude Code, Codex, OpenCode) and scope where ctxmill is installed: the files, then each
installed hook run as the host runs it, the MCP server started and asked for its tools, and (for
OpenCode) the engine the plugin starts (`ctxmill.doctor_checks`; a scratch home, so nothing of the
project changes). Prints one line per check (ok / problem: what is wrong and how to fix it); exit 1
if any failed. A client installed in neither scope is one problem line saying how to install it.
Then whether always-on compression is on and its proxy answers (`ctxmill.always_on.status`).
"""

from __future__ import annotations

import argparse


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


def _claude_code(root, home) -> list[tuple[str, str | None]]:
    from ctxmill import doctor_checks, integrations
    from ctxmill.paths import global_home

    found: list[tuple[str, str | None]] = []
    targets = {"user": integrations.ClaudeCodeTarget.for_scope("user", root, global_home()),
               "project": integrations.ClaudeCodeTarget.for_scope("project", root, home)}
    for scope, target in targets.items():
        hooks = integrations.installed_hooks(target)
        if not hooks and integrations.installed_mcp(target) is None:
            continue
        problems = integrations.claude_code_status(target, _proxy_url("claude-code") if scope == "user" else None)
        name = f"Claude Code ({scope} scope)"
        found.append((f"{name}: files", "; ".join(problems) + " - re-run `ctxmill install claude-code"
                      + (" --project`" if scope == "project" else "`") if problems else None))
        found += [(f"{name}: {n}", p) for n, p in doctor_checks.run_hooks(hooks, integrations.HOOK_TIMEOUTS)]
        n, p = doctor_checks.run_mcp(integrations.installed_mcp(target))
        found.append((f"{name}: {n}", p))
    return found or [("Claude Code", "ctxmill is not installed - run `ctxmill install claude-code` (or --project)")]


def _proxy_url(client: str) -> str | None:
    """The always-on proxy's URL when `client` is set up to use it."""
    from ctxmill import always_on
    from ctxmill.paths import global_home

    state = always_on.read_state(global_home())
    return always_on.url(state["port"]) if state and client in state["clients"] else None


def _codex(root, home) -> list[tuple[str, str | None]]:  # noqa: ARG001 - the clients' common signature
    from ctxmill import codex_install, doctor_checks
    from ctxmill.paths import global_home

    target = codex_install.CodexTarget.for_user(global_home())
    mcp = codex_install.installed_mcp(target)
    if mcp is None:
        return [("Codex", "ctxmill is not installed - run `ctxmill install codex`")]
    problems = codex_install.codex_status(target, _proxy_url("codex"))
    found = [("Codex (user scope): files", "; ".join(problems) + " - re-run `ctxmill install codex`" if problems
              else None)]
    n, p = doctor_checks.run_mcp(mcp)
    return [*found, (f"Codex (user scope): {n}", p)]


def _opencode(root, home) -> list[tuple[str, str | None]]:
    import json

    from ctxmill import doctor_checks, opencode_install
    from ctxmill.paths import global_home

    found: list[tuple[str, str | None]] = []
    targets = {"user": opencode_install.OpenCodeTarget.for_scope("user", root, global_home()),
               "project": opencode_install.OpenCodeTarget.for_scope("project", root, home)}
    for scope, target in targets.items():
        if not target.plugin.exists() and opencode_install.installed_mcp(target) is None:
            continue
        problems = opencode_install.opencode_status(target)
        name = f"OpenCode ({scope} scope)"
        found.append((f"{name}: files", "; ".join(problems) + " - re-run `ctxmill install opencode"
                      + (" --project`" if scope == "project" else "`") if problems else None))
        n, p = doctor_checks.run_mcp(opencode_install.installed_mcp(target))
        found.append((f"{name}: {n}", p))
        try:
            sidecar = target.plugin.with_name(opencode_install.COMMAND_FILE)
            command = json.loads(sidecar.read_text())["command"] if sidecar.exists() else ["ctxmill"]
        except (OSError, ValueError, KeyError):
            command = ["ctxmill"]
        n, p = doctor_checks.run_engine(command)
        found.append((f"{name}: {n}", p))
    return found or [("OpenCode", "ctxmill is not installed - run `ctxmill install opencode` (or --project)")]


def checks() -> list[tuple[str, str | None]]:
    """(name, problem or None)."""
    from ctxmill.paths import global_home, project_home, project_root, user_ccr_dir

    found: list[tuple[str, str | None]] = []
    home, root = project_home(), project_root()
    clients = [_claude_code(root, home), _codex(root, home), _opencode(root, home)]
    installed = [c for c in clients if len(c) > 1 or c[0][1] is None or "not installed" not in c[0][1]]
    for client in clients:
        if installed and client not in installed:  # one client is enough: name the other, no problem
            client = [(f"{client[0][0]}: not installed ({client[0][1].split(' - ')[1]})", None)]
        found += client
    from ctxmill import always_on

    found.append(always_on.status(global_home()))
    try:
        from compress.tokens import exact_counter
        from ctxmill.settings import tiktoken_cache

        exact = exact_counter(tiktoken_cache())
        kind = "exact o200k" if exact else "fast estimate (`pip install ctxmill[exact]` for exact counts)"
        found.append((f"token counter in use: {kind}", None))
    except Exception as exc:  # noqa: BLE001 - report, never crash the doctor
        found.append(("token counter", f"{type(exc).__name__}: {exc}"))
    for name, path in (("project home", home), ("CCR store", user_ccr_dir()), ("global memory", global_home())):
        found.append((f"{name} writable ({path})", _writable(path)))
    try:
        import mcp  # noqa: F401

        found.append(("mcp SDK importable", None))
    except ImportError:
        found.append(("mcp SDK", "not installed - `pip install mcp` (the MCP server needs it)"))
    return found


def run(args: argparse.Namespace) -> int:
    failed = 0
    for name, problem in checks():
        print(f"ok       {name}" if problem is None else f"problem  {name}: {problem}")
        failed += problem is not None
    return 1 if failed else 0
