"""`ctxmill doctor`: check the installation, the token counter and that the stores are writable.

Prints one line per check (ok / problem: what is wrong and how to fix it); exit 1 if any failed.
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


def checks() -> list[tuple[str, str | None]]:
    """(name, problem or None)."""
    from ctxmill import integrations
    from ctxmill.paths import global_home, project_home, project_root, user_ccr_dir

    found: list[tuple[str, str | None]] = []
    home, root = project_home(), project_root()
    project = integrations.ClaudeCodeTarget.for_scope("project", root, home)
    user = integrations.ClaudeCodeTarget.for_scope("user", root, global_home())
    problems = {scope: integrations.claude_code_status(t) for scope, t in (("project", project), ("user", user))}
    installed = [scope for scope, p in problems.items() if not p]
    if installed:
        found.append((f"Claude Code integration ({installed[0]} scope)", None))
    else:
        detail = "; ".join(problems["project"])
        found.append(("Claude Code integration", f"{detail} - run `ctxmill install claude-code` (or --user)"))
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
