"""`ctxmill install claude-code [--project|--user]` and `ctxmill install opencode` (see ctxmill.integrations)."""

from __future__ import annotations

import argparse

HOSTS = ("claude-code", "opencode")


def add_host_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("host", choices=HOSTS)
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--project", dest="scope", action="store_const", const="project",
                       help="this project: .claude/ and .mcp.json (default)")
    scope.add_argument("--user", dest="scope", action="store_const", const="user",
                       help="Claude Code user scope: ~/.claude/ and ~/.claude.json")
    parser.set_defaults(scope="project")


def register(subparsers) -> None:
    parser = subparsers.add_parser("install", help="add ctxmill hooks, slash commands and MCP server to a host")
    add_host_arguments(parser)
    parser.set_defaults(func=run)


def apply(args: argparse.Namespace, install: bool) -> int:
    from ctxmill import integrations
    from ctxmill.errors import CliError
    from ctxmill.paths import global_home, project_home, project_root

    root = project_root()
    home = global_home() if args.scope == "user" else project_home()
    try:
        if args.host == "claude-code":
            target = integrations.ClaudeCodeTarget.for_scope(args.scope, root, home)
            fn = integrations.install_claude_code if install else integrations.uninstall_claude_code
            change = fn(target)
        elif args.scope == "user":
            raise CliError("opencode is installed per project (drop --user)")
        else:
            fn = integrations.install_opencode if install else integrations.uninstall_opencode
            change = fn(root, home)
    except ValueError as exc:
        raise CliError(f"{exc} - fix or remove the file, then re-run") from None
    except OSError as exc:
        raise CliError(f"{exc.filename or ''}: {exc.strerror or exc}") from None
    for line in change.lines() or ["nothing to do"]:
        print(line)
    return 0


def run(args: argparse.Namespace) -> int:
    return apply(args, install=True)
