"""Install ctxmill into Claude Code, and undo exactly that (OpenCode: `ctxmill.install.opencode`).

Claude Code (scope user, the default: `~/.claude/`, `~/.claude.json`; scope project:
`<root>/.claude/`, `<root>/.mcp.json`): hooks merged into `settings.json` (one command hook per
event, recognised by its command `… hook EVENT`), slash commands `commands/checkpoint.md` and
`commands/dream.md`, and the MCP server `ctxmill` under `mcpServers`. Hooks, MCP server and slash
commands all run the same command (`ctxmill.install.launch.resolved_command`): `ctxmill` from PATH in
project files, so a team can check them in. With a proxy URL (always-on, `ctxmill.always_on`),
`env` in settings.json points Claude Code at it (ANTHROPIC_BASE_URL, ENABLE_TOOL_SEARCH=true);
the values it replaced are kept in the manifest and put back by uninstall.

What must hold: installing twice equals installing once; every JSON file is backed up
(`<file>.ctxmill.bak`) before its first change and written atomically; uninstall removes only
what install added (our hook entries, our MCP entry, command files that still hold our text) and
deletes files install created that are left empty; a file whose backup holds the same data as
what is left gets the backup back, byte for byte and with its mode (backups keep both). A
manifest of created files is kept in the ctxmill home (`installed-<host>.json`).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from ctxmill.hooks import EVENTS, GUARDED_TOOLS
from ctxmill.install.backups import back_up, restore_backup

HOOK_TIMEOUTS = {"SessionStart": 30, "UserPromptSubmit": 5, "PreToolUse": 5, "PreCompact": 60, "SessionEnd": 60,
                 "Stop": 30}
MARK = "<!-- installed by ctxmill -->"
COMMAND_NAMES = ("checkpoint.md", "dream.md", "distill.md")
PROXY_ENV = "ANTHROPIC_BASE_URL"
TOOL_SEARCH_ENV = "ENABLE_TOOL_SEARCH"


def slash_commands(command: list[str], shell: str, client: str, checkpoint: str) -> dict[str, str]:
    """The slash commands (`COMMAND_NAMES`) of a client whose agent runs shell commands with
    `shell` ("Bash": Claude Code, whose commands also name their `allowed-tools`), each running
    `command` (the one the hooks run); `checkpoint` is what /checkpoint asks (`{cmd}`: the command)."""
    cmd = shlex.join(command)

    def page(name: str, description: str, body: str) -> str:
        allowed = f"allowed-tools: Bash({cmd} {name}:*)\n" if shell == "Bash" else ""
        return f"---\ndescription: {description}\n{allowed}---\n{MARK}\n{body}\n"

    return {
        "checkpoint.md": page("checkpoint", "Save a ctxmill checkpoint of this session (task, decisions, files, next steps)",
                              checkpoint.format(cmd=cmd)),
        "dream.md": page("dream", "Consolidate ctxmill notes and checkpoints into MEMORY.md",
                         f"Run `{cmd} dream` with {shell} and report its one-line result."),
        # candidates first, skill files only for those the person accepts
        "distill.md": page("distill", "Propose skills from command sequences that recur across past sessions (ctxmill distill)",
                           f"Run `{cmd} distill --show` with {shell} and show me each candidate skill file it prints in full. "
                           f"Ask me\nwhich ones to keep, then write only those with `{cmd} distill --apply --yes {client} "
                           "--only NAME` (one\n--only per accepted name) and tell me the files it wrote."),
    }


def claude_commands(command: list[str]) -> dict[str, str]:
    """Claude Code's slash commands."""
    return slash_commands(command, "Bash", "--client claude-code",
                          "Call the `checkpoint` tool of the ctxmill MCP server (or run `{cmd} checkpoint` with Bash).\n"
                          "Then tell me in two lines what the checkpoint recorded as next steps.")


@dataclass
class Change:
    """What one install or uninstall did (for the CLI to print)."""

    written: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    proxied: bool = False
    """Install pointed the client at the always-on proxy."""
    upstream: str | None = None
    """The base URL the client used before install pointed it at the proxy (None: the provider's)."""

    def lines(self) -> list[str]:
        return [f"wrote {p}" for p in self.written] + [f"removed {p}" for p in self.removed]


def _load_json(path: Path) -> dict:
    if not path.exists():
        return {}
    text = path.read_text("utf-8")
    data = json.loads(text) if text.strip() else {}
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return data


def _write_json(path: Path, data: dict, change: Change, created: Collection[str] = ()) -> None:
    """Write `data`; the first change to a file ctxmill did not create backs it up first."""
    from ground.files import atomic_write

    back_up(path, created)
    atomic_write(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    change.written.append(path)


def _is_ours(hook: dict, event: str) -> bool:
    command = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(command, str) and "ctxmill" in command and command.rstrip().endswith(f" hook {event}")


def _without_our_hooks(settings: dict) -> dict:
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return settings
    for event in EVENTS:
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list):
                rest = [h for h in inner if not _is_ours(h, event)]
                if not rest:
                    continue
                group = {**group, "hooks": rest}
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del settings["hooks"]
    return settings


def _with_our_hooks(settings: dict, command: list[str]) -> dict:
    settings = _without_our_hooks(settings)
    hooks = settings.setdefault("hooks", {})
    base = shlex.join(command)
    for event in EVENTS:
        entry = {"type": "command", "command": f"{base} hook {event}", "timeout": HOOK_TIMEOUTS[event]}
        group = {"matcher": GUARDED_TOOLS} if event == "PreToolUse" else {}
        hooks.setdefault(event, []).append({**group, "hooks": [entry]})
    return settings


def _set_mcp(path: Path, command: list[str], change: Change, created: list[str]) -> None:
    data = _load_json(path)
    if not path.exists():
        created.append(str(path))
    data.setdefault("mcpServers", {})["ctxmill"] = {"type": "stdio", "command": command[0], "args": [*command[1:], "mcp"]}
    _write_json(path, data, change, created)


def _unset_mcp(path: Path, container: str, change: Change, created: set[str]) -> None:
    data = _load_json(path)
    servers = data.get(container)
    if not isinstance(servers, dict) or "ctxmill" not in servers:
        return
    del servers["ctxmill"]
    if not servers:
        del data[container]
    _drop_or_write(path, data, change, created)


def _drop_or_write(path: Path, data: dict, change: Change, created: set[str]) -> None:
    """Uninstall's write: a file ctxmill created and left empty goes; one whose backup holds the
    same data gets the backup back, byte for byte; any other is written."""
    if str(path) in created and not data:
        path.unlink()
        change.removed.append(path)
    elif restore_backup(path, lambda backup: _load_json(backup) == data):
        change.written.append(path)
    else:
        _write_json(path, data, change, created)


def write_commands(folder: Path, commands: dict[str, str], change: Change, created: list[str]) -> None:
    from ground.files import atomic_write

    if not folder.exists():
        created.append(str(folder))
    for name, text in commands.items():
        path = folder / name
        if path.exists() and MARK not in path.read_text("utf-8", errors="replace"):
            continue  # the user's own command of that name: leave it alone
        atomic_write(path, text.encode("utf-8"))
        change.written.append(path)


def remove_commands(folder: Path, change: Change, created: set[str]) -> None:
    for name in COMMAND_NAMES:
        path = folder / name
        if path.exists() and MARK in path.read_text("utf-8", errors="replace"):
            path.unlink()
            change.removed.append(path)
    while str(folder) in created and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        change.removed.append(folder)
        folder = folder.parent


@dataclass(frozen=True)
class ClaudeCodeTarget:
    """Where a Claude Code installation lives for one scope."""

    settings: Path
    commands: Path
    mcp_file: Path
    manifest: Path

    @classmethod
    def for_scope(cls, scope: str, root: Path, ctxmill_home: Path) -> ClaudeCodeTarget:
        if scope == "user":  # the user's own folders: their links are followed (see ctxmill.paths)
            home = Path.home().resolve()
            claude = (home / ".claude").resolve()
            return cls(claude / "settings.json", claude / "commands", home / ".claude.json",
                       ctxmill_home / "installed-claude-code.json")
        return cls(root / ".claude" / "settings.json", root / ".claude" / "commands", root / ".mcp.json",
                   ctxmill_home / "installed-claude-code.json")


def manifest(path: Path) -> set[str]:
    try:
        return set(json.loads(path.read_text("utf-8")).get("created", []))
    except (OSError, ValueError, AttributeError):
        return set()


def manifest_extra(path: Path) -> dict:
    """What else the manifest keeps (e.g. the values install replaced), {} when none."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if k != "created"} if isinstance(data, dict) else {}


def save_manifest(path: Path, created: set[str], **extra) -> None:
    from ground.files import atomic_write

    atomic_write(path, json.dumps({"created": sorted(created), **extra}, indent=2).encode("utf-8"))


def _with_proxy_env(settings: dict, proxy_url: str, replaced: dict) -> tuple[dict, dict]:
    """`settings` whose `env` points Claude Code at the proxy, and the values it replaced (None:
    unset; an earlier install's record is kept). ENABLE_TOOL_SEARCH=true: behind a base URL that is
    not Anthropic's, Claude Code otherwise sends every tool definition with every request; a
    value the person set stays."""
    env = settings.setdefault("env", {})
    if not isinstance(env, dict):
        raise ValueError("`env` in Claude Code's settings is not a JSON object")
    before = dict(replaced)
    for key, value in ((PROXY_ENV, proxy_url), (TOOL_SEARCH_ENV, "true")):
        if key not in before:
            before[key] = env.get(key)
        if key == PROXY_ENV or before[key] is None:
            env[key] = value
    return settings, before


def _without_proxy_env(settings: dict, replaced: dict, proxy_url: str | None) -> dict:
    """Undo `_with_proxy_env`: each value install set and nobody changed since gets back what it replaced."""
    env = settings.get("env")
    if not isinstance(env, dict) or not replaced:
        return settings
    ours = {PROXY_ENV: proxy_url, TOOL_SEARCH_ENV: "true"}
    for key, old in replaced.items():
        if key in ours and env.get(key) == ours[key] and (key == PROXY_ENV or old is None):
            if old is None:
                env.pop(key, None)
            else:
                env[key] = old
    if not env:
        del settings["env"]
    return settings


def install_claude_code(target: ClaudeCodeTarget, command: list[str], proxy_url: str | None = None) -> Change:
    """Hooks, slash commands and MCP server; with `proxy_url`, Claude Code's requests go to it
    (`env` in settings.json; `Change.upstream`: the base URL it had, which the proxy forwards to)."""
    change = Change()
    new = sorted(manifest(target.manifest))  # files ctxmill created, this run's appended
    extra = manifest_extra(target.manifest)
    if not target.settings.parent.exists():
        new.append(str(target.settings.parent))
    if not target.settings.exists():
        new.append(str(target.settings))
    settings = _with_our_hooks(_load_json(target.settings), command)
    if proxy_url:
        settings, replaced = _with_proxy_env(settings, proxy_url, extra.get("env", {}))
        previous = (replaced[PROXY_ENV] or os.environ.get(PROXY_ENV) or "").rstrip("/")
        ours = (proxy_url, extra.get("proxy_url"))  # a shell inside a session sees the proxy's URL
        change.upstream = previous if previous and previous not in ours else None
        change.proxied = True
        extra = {"env": replaced, "proxy_url": proxy_url}
    else:
        settings = _without_proxy_env(settings, extra.get("env", {}), extra.get("proxy_url"))
        extra = {}
    _write_json(target.settings, settings, change, new)
    write_commands(target.commands, claude_commands(command), change, new)
    _set_mcp(target.mcp_file, command, change, new)
    save_manifest(target.manifest, set(new), **extra)
    return change


def uninstall_claude_code(target: ClaudeCodeTarget) -> Change:
    change = Change()
    created = manifest(target.manifest)
    extra = manifest_extra(target.manifest)
    if target.settings.exists():
        settings = _without_proxy_env(_without_our_hooks(_load_json(target.settings)), extra.get("env", {}),
                                      extra.get("proxy_url"))
        _drop_or_write(target.settings, settings, change, created)
    if str(target.settings.parent) in created and target.settings.parent.is_dir():
        created.add(str(target.commands))  # inside a folder we created
    remove_commands(target.commands, change, created)
    if target.mcp_file.exists():
        _unset_mcp(target.mcp_file, "mcpServers", change, created)
    target.manifest.unlink(missing_ok=True)
    return change


def claude_code_status(target: ClaudeCodeTarget, proxy_url: str | None = None) -> list[str]:
    """Problems of an installation, each with how to fix it ([] when complete); with `proxy_url`,
    settings.json must send Claude Code's requests there."""
    problems = []
    try:
        settings = _load_json(target.settings)
        named_env = settings.get("env")
        env = named_env if isinstance(named_env, dict) else {}
        if proxy_url and env.get(PROXY_ENV) != proxy_url:
            problems.append(f"{target.settings} does not send Claude Code's requests to {proxy_url} "
                            f"({PROXY_ENV} is {env.get(PROXY_ENV)!r})")
        groups = settings.get("hooks", {})
        missing = [e for e in EVENTS if not any(_is_ours(h, e) for g in groups.get(e, []) if isinstance(g, dict)
                                                for h in g.get("hooks", []))]
        if missing:
            problems.append(f"hooks missing in {target.settings}: {', '.join(missing)}")
    except ValueError as exc:
        problems.append(f"{target.settings} is not valid JSON ({exc})")
    for name in COMMAND_NAMES:
        if not (target.commands / name).exists():
            problems.append(f"slash command file missing: {target.commands / name}")
    try:
        if "ctxmill" not in _load_json(target.mcp_file).get("mcpServers", {}):
            problems.append(f"MCP server not registered in {target.mcp_file}")
    except ValueError as exc:
        problems.append(f"{target.mcp_file} is not valid JSON ({exc})")
    return problems


def installed_hooks(target: ClaudeCodeTarget) -> dict[str, str]:
    """Event -> the command of ctxmill's hook for it, as installed ({} when none or unreadable)."""
    try:
        groups = _load_json(target.settings).get("hooks", {})
    except (OSError, ValueError):
        return {}
    return {e: h["command"] for e in EVENTS for g in groups.get(e, []) if isinstance(g, dict)
            for h in g.get("hooks", []) if _is_ours(h, e)}


def installed_mcp(target: ClaudeCodeTarget) -> list[str] | None:
    """The command line of the installed `ctxmill` MCP server (None when not registered)."""
    try:
        entry = _load_json(target.mcp_file).get("mcpServers", {}).get("ctxmill")
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return None
    return [entry["command"], *[a for a in entry.get("args", []) if isinstance(a, str)]]
