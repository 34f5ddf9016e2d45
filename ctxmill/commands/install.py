"""`ctxmill install claude-code|codex|opencode [--user|--project] [--port N] [--no-proxy]`
(see ctxmill.install.claude_code, ctxmill.install.codex, ctxmill.install.opencode).

User scope is the default: every project of this user gets ctxmill, and nothing is written into the
project. `--project` writes files a team can check in; they call `ctxmill` from PATH. In a git
repository it also registers the memory files' merge driver (`ctxmill.install.git_memory`).
Claude Code and Codex (user scope) are also pointed at the always-on proxy on 127.0.0.1:N
(default 8787; `ctxmill.always_on`), which forwards to the base URL they used before (kept as
`[proxy] upstream_*` in `<global home>/config.toml`); `--no-proxy` leaves their requests alone.
Every install writes `.ctxmill/.gitignore` in a project that has a `.ctxmill/` (with `--project`:
always), so what is not the project's memory stays out of git, and compiles the `.pyc` files of
ctxmill's packages (an install that never did starts every hook 25-35% slower).
"""

from __future__ import annotations

import argparse

from ctxmill.proxy_config import DEFAULT_PORT

HOSTS = ("claude-code", "codex", "opencode")
UPSTREAM_KEY = {"claude-code": "upstream_anthropic", "codex": "upstream_openai"}


def add_host_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("host", choices=HOSTS)
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--user", dest="scope", action="store_const", const="user",
                       help="every project of this user (default): ~/.claude/ and ~/.claude.json, ~/.codex/, "
                            "~/.config/opencode/")
    scope.add_argument("--project", dest="scope", action="store_const", const="project",
                       help="this project, in files a team can check in: .claude/ and .mcp.json, opencode.json(c) "
                            "and .opencode/ (not for Codex)")
    parser.set_defaults(scope="user")


def register(subparsers) -> None:
    parser = subparsers.add_parser("install", help="add ctxmill hooks or plugin, slash commands and MCP server to a host,"
                                                   " and send its requests through the always-on proxy")
    add_host_arguments(parser)
    parser.add_argument("--port", type=int, help=f"port of the always-on proxy (default {DEFAULT_PORT})")
    parser.add_argument("--no-proxy", action="store_true",
                        help="leave the client's requests alone (compress them only through `ctxmill run`)")
    parser.set_defaults(func=run)


def _port(args: argparse.Namespace, global_home) -> tuple[int | None, str | None]:
    """(the always-on proxy's port, None) or, when the port is held by another program, (None, why:
    the rest of the install goes on without always-on)."""
    from ctxmill import always_on, channel
    from ctxmill.errors import CliError

    state = always_on.read_state(global_home)
    port = args.port or (state["port"] if state else DEFAULT_PORT)
    if not 0 < port < 65536:
        raise CliError(f"--port must be 1..65535, got {port}")
    if state and state["port"] != port and set(state["clients"]) - {args.host}:
        raise CliError(f"{', '.join(state['clients'])} already use the always-on proxy on port {state['port']}: "
                       "install with that --port, or uninstall them first")
    held = channel.problem(port)
    if held or always_on.serving_pid(port) is None and not always_on.port_is_free(port):
        return None, (f"{held or f'port {port} is taken by another program'}; {args.host}'s requests are left "
                      "alone: re-run with a free --port for always-on compression")
    return port, None


def _change(args: argparse.Namespace, install: bool, root, home, global_home, command, proxy_url):
    """(what changed, warnings) for one host."""
    from ctxmill.install import claude_code, codex, opencode

    if args.host == "claude-code":
        target = claude_code.ClaudeCodeTarget.for_scope(args.scope, root, home)
        return (claude_code.install_claude_code(target, command, proxy_url) if install
                else claude_code.uninstall_claude_code(target)), []
    if args.host == "codex":
        codex_target = codex.CodexTarget.for_user(global_home)
        return codex.install_codex(codex_target, command, proxy_url) if install \
            else (codex.uninstall_codex(codex_target), [])
    oc = opencode.OpenCodeTarget.for_scope(args.scope, root, home)
    return opencode.install_opencode(oc, command) if install else opencode.uninstall_opencode(oc)


def _upstream(host: str, global_home, change, port: int | None) -> list[str]:
    """Keep the base URL the client used as the proxy's upstream in the global config and turn
    always-on on for `host` when install pointed it at the proxy; else undo both. Warnings."""
    from ctxmill import always_on
    from ctxmill.install import toml_files
    from ctxmill.install.claude_code import manifest_extra, save_manifest
    from ctxmill.settings import CONFIG_FILE

    record, config, warnings = global_home / f"upstream-{host}.json", global_home / CONFIG_FILE, []
    kept = manifest_extra(record).get("upstream")  # what an earlier install wrote into the config
    if change.proxied and change.upstream is None:  # a reinstall from a shell without the gateway keeps it
        change.upstream = kept
    if not change.proxied or kept != change.upstream:
        toml_files.drop_upstream(config, UPSTREAM_KEY[host], kept, change)
        kept = None
        if change.proxied:
            kept, note = toml_files.keep_upstream(config, UPSTREAM_KEY[host], change.upstream, change)
            warnings += [note] if note else []
    if change.proxied:
        assert port is not None, "install points a client at the proxy only with the port it was given"
        save_manifest(record, set(), upstream=kept)
        always_on.enable(global_home, host, port)
    else:
        record.unlink(missing_ok=True)
        always_on.disable(global_home, host)
    return warnings


def apply(args: argparse.Namespace, install: bool) -> int:
    import sys

    from ctxmill import always_on
    from ctxmill.errors import CliError
    from ctxmill.install.launch import resolved_command
    from ctxmill.paths import ensure_gitignore, global_home, project_home, project_root

    if args.host == "codex" and args.scope == "project":
        raise CliError("Codex is installed for your user only (its project config needs the project trusted)")
    root, ghome = project_root(), global_home()
    home = ghome if args.scope == "user" else project_home()
    command, warning = resolved_command(args.scope)
    warnings = [warning] if warning and install else []
    proxied = args.host in UPSTREAM_KEY and args.scope == "user"
    port, taken = _port(args, ghome) if install and proxied and not args.no_proxy else (None, None)
    warnings += [taken] if taken else []
    try:
        change, more = _change(args, install, root, home, ghome, command, port and always_on.url(port))
        warnings += more
        if proxied:
            warnings += _upstream(args.host, ghome, change, port)
        if install and (args.scope == "project" or project_home().is_dir()):
            written = ensure_gitignore(project_home())
            change.written += [written] if written else []
    except ValueError as exc:
        raise CliError(f"{exc} - fix or remove the file, then re-run") from None
    except OSError as exc:
        raise CliError(f"{exc.filename or ''}: {exc.strerror or exc}") from None
    lines = change.lines()
    if args.scope == "project" and (root / ".git").exists():  # the team's memory files merge entry by entry
        import subprocess

        from ctxmill.install.git_memory import register, unregister

        try:
            lines = lines + (register(root, resolved_command("user")[0]) if install else unregister(root))
        except (OSError, ValueError, subprocess.CalledProcessError) as exc:
            warnings.append(f"the memory files' git merge driver: {exc}")
    for line in lines or ["nothing to do"]:
        print(line)
    if install and port and always_on.read_state(ghome):
        print(f"requests go through the always-on proxy on {always_on.url(port)}"
              + (f", which forwards to {change.upstream}" if change.upstream else "")
              + " (it starts with the next session; `ctxmill doctor` checks it)")
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    return 1 if any(w.startswith("left ") for w in warnings) else 0


PACKAGES = ("ctxmill", "compress", "ccr", "ground", "memory", "repomap")
"""ctxmill's packages a hook imports (`replay` is the measuring harness: never)."""


def compile_bytecode(folders=None) -> str | None:
    """Compile the `.pyc` files of ctxmill's packages (`folders`: their folders, by default where
    `PACKAGES` are installed): a hook starts a process per prompt, and one that compiles what it
    imports first is 25-35% slower. Only stale files are compiled. None, or a warning when a
    folder cannot be written (the hooks then compile what they import on each start)."""
    import compileall
    import importlib.util
    from pathlib import Path

    if folders is None:
        specs = (importlib.util.find_spec(name) for name in PACKAGES)
        folders = [Path(p) for spec in specs if spec and spec.submodule_search_locations
                   for p in spec.submodule_search_locations]
    failed = [str(f) for f in folders if not compileall.compile_dir(f, quiet=2, workers=1)]
    return f"could not compile the .pyc files in {', '.join(failed)}: hooks start slower" if failed else None


def run(args: argparse.Namespace) -> int:
    code = apply(args, install=True)
    warning = compile_bytecode()
    if warning:
        import sys

        print(f"warning: {warning}", file=sys.stderr)
    return code
