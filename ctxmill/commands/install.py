"""`ctxmill install claude-code|opencode [--user|--project]` (see ctxmill.integrations, ctxmill.opencode_install).

User scope is the default: every project of this user gets ctxmill, and nothing is written into the
project. `--project` writes files a team can check in; they call `ctxmill` from PATH. In a git
repository it also registers the memory files' merge driver (`ctxmill.git_memory`).
"""

from __future__ import annotations

import argparse

HOSTS = ("claude-code", "opencode")


def add_host_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("host", choices=HOSTS)
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--user", dest="scope", action="store_const", const="user",
                       help="every project of this user (default): ~/.claude/ and ~/.claude.json, ~/.config/opencode/")
    scope.add_argument("--project", dest="scope", action="store_const", const="project",
                       help="this project, in files a team can check in: .claude/ and .mcp.json, opencode.json(c) "
                            "and .opencode/")
    parser.set_defaults(scope="user")


def register(subparsers) -> None:
    parser = subparsers.add_parser("install", help="add ctxmill hooks or plugin, slash commands and MCP server to a host")
    add_host_arguments(parser)
    parser.set_defaults(func=run)


def apply(args: argparse.Namespace, install: bool) -> int:
    import sys

    from ctxmill import integrations, opencode_install
    from ctxmill.errors import CliError
    from ctxmill.launch import resolved_command
    from ctxmill.paths import global_home, project_home, project_root

    root = project_root()
    home = global_home() if args.scope == "user" else project_home()
    command, warning = resolved_command(args.scope)
    warnings = [warning] if warning and install else []
    try:
        if args.host == "claude-code":
            target = integrations.ClaudeCodeTarget.for_scope(args.scope, root, home)
            change = integrations.install_claude_code(target, command) if install \
                else integrations.uninstall_claude_code(target)
        else:
            oc = opencode_install.OpenCodeTarget.for_scope(args.scope, root, home)
            change, more = opencode_install.install_opencode(oc, command) if install \
                else opencode_install.uninstall_opencode(oc)
            warnings += more
    except ValueError as exc:
        raise CliError(f"{exc} - fix or remove the file, then re-run") from None
    except OSError as exc:
        raise CliError(f"{exc.filename or ''}: {exc.strerror or exc}") from None
    lines = change.lines()
    if args.scope == "project" and (root / ".git").exists():  # the team's memory files merge entry by entry
        import subprocess

        from ctxmill.git_memory import register, unregister

        try:
            lines = lines + (register(root, resolved_command("user")[0]) if install else unregister(root))
        except (OSError, ValueError, subprocess.CalledProcessError) as exc:
            warnings.append(f"the memory files' git merge driver: {exc}")
    for line in lines or ["nothing to do"]:
        print(line)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    return 1 if any(w.startswith("left ") for w in warnings) else 0


def run(args: argparse.Namespace) -> int:
    return apply(args, install=True)
