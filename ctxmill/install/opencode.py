"""Install ctxmill into OpenCode, and undo exactly that.

Scope user (the default): OpenCode's global config folder (`$XDG_CONFIG_HOME/opencode`, default
`~/.config/opencode`); scope project: `<root>/.opencode/` and the project's `opencode.json(c)`.
Installed: the plugin (`plugins/ctxmill.js`, auto-loaded by OpenCode; `ctxmill-command.json`
beside it only in user scope when `ctxmill` on PATH is not this installation), the MCP server
`mcp.ctxmill` in the config file, and the slash commands `commands/{checkpoint,dream}.md`.

Config files are JSONC (OpenCode reads comments and trailing commas in either name): the edit
touches only the `mcp.ctxmill` member (`ground.jsonc`), so comments and formatting stay; a file
that does not parse is left alone and the member to add is printed. The config file edited is
the one that already holds `mcp.ctxmill`, else `opencode.jsonc`, else `opencode.json` (user scope:
also `config.json`) when present, else a new `opencode.json`. Commands go to `commands/` (the
legacy `command/` files an older ctxmill wrote are removed).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ctxmill.install.backups import back_up
from ctxmill.install.claude_code import Change, manifest, remove_commands, save_manifest, slash_commands, write_commands

SCHEMA = "https://opencode.ai/config.json"
PLUGIN_FILE = "ctxmill.js"
COMMAND_FILE = "ctxmill-command.json"


def opencode_commands(command: list[str]) -> dict[str, str]:
    """OpenCode's slash commands: its plugin saves the checkpoint, /checkpoint reads it."""
    return slash_commands(command, "the bash tool", "--client opencode",
                          "ctxmill's plugin has just saved a checkpoint of this session to `.ctxmill/checkpoint.md`. "
                          "Read that\nfile and tell me in two lines what it records as next steps.")


@dataclass(frozen=True)
class OpenCodeTarget:
    folder: Path
    """OpenCode's config folder of the scope: plugins/, commands/."""
    config_names: tuple[Path, ...]
    """Candidate config files, preferred first when none holds our entry yet."""
    manifest: Path
    scope: str

    @classmethod
    def for_scope(cls, scope: str, root: Path, ctxmill_home: Path) -> OpenCodeTarget:
        if scope == "user":
            # the user's own folder: its links are followed (see ctxmill.paths)
            base = (Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "opencode").resolve()
            names: tuple[Path, ...] = (base / "opencode.jsonc", base / "opencode.json", base / "config.json")
            return cls(base, names, ctxmill_home / "installed-opencode-user.json", scope)
        names = (root / "opencode.jsonc", root / "opencode.json")
        return cls(root / ".opencode", names, ctxmill_home / "installed-opencode.json", scope)

    @property
    def plugin(self) -> Path:
        return self.folder / "plugins" / PLUGIN_FILE

    @property
    def commands(self) -> Path:
        return self.folder / "commands"

    def config_file(self) -> Path:
        from ground.jsonc import loads

        present = [p for p in self.config_names if p.exists()]
        for path in present:
            try:
                if "ctxmill" in (loads(path.read_text("utf-8")).get("mcp") or {}):
                    return path
            except (ValueError, AttributeError, OSError):
                continue
        return present[0] if present else self.config_names[1]


def _edit_config(path: Path, command: list[str] | None, change: Change, created: list[str]) -> str | None:
    """Set (command) or remove (None) `mcp.ctxmill`; a warning when the file is left alone."""
    from ground.files import atomic_write
    from ground.jsonc import loads, remove_member, set_member

    entry = {"type": "local", "command": [*command, "mcp"], "enabled": True} if command else None
    text = path.read_text("utf-8") if path.exists() else ""
    try:
        if entry is None:
            new = remove_member(text, ["mcp", "ctxmill"])
            if new != text and f"{path}#mcp" in created and not (loads(new).get("mcp") or {}):
                new = remove_member(new, ["mcp"])  # the `mcp` object install added
        else:
            if "mcp" not in loads(text or "{}"):
                created.append(f"{path}#mcp")
            new = set_member(text or json.dumps({"$schema": SCHEMA}, indent=2) + "\n", ["mcp", "ctxmill"], entry)
    except ValueError as exc:
        snippet = json.dumps({"mcp": {"ctxmill": entry}}) if entry else '"mcp": {"ctxmill": …}'
        return f"left {path} alone: it is not valid JSONC ({exc}); {'add' if entry else 'remove'} {snippet} yourself"
    if new == text:
        return None
    if not path.exists():
        created.append(str(path))
    elif str(path) in created and set(loads(new)) <= {"$schema"}:
        path.unlink()
        change.removed.append(path)
        return None
    back_up(path, created)
    atomic_write(path, new.encode("utf-8"))
    change.written.append(path)
    return None


def install_opencode(target: OpenCodeTarget, command: list[str]) -> tuple[Change, list[str]]:
    """(what changed, warnings)."""
    from ctxmill.opencode_plugin import PLUGIN
    from ground.files import atomic_write

    change, warnings = Change(), []
    new = sorted(manifest(target.manifest))
    for folder in (target.folder, target.plugin.parent):
        if not folder.exists():
            new.append(str(folder))
    target.plugin.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target.plugin, PLUGIN.read_bytes())
    change.written.append(target.plugin)
    sidecar = target.plugin.with_name(COMMAND_FILE)
    if command != ["ctxmill"]:
        atomic_write(sidecar, json.dumps({"command": command}).encode("utf-8"))
        change.written.append(sidecar)
    elif sidecar.exists():
        sidecar.unlink()
        change.removed.append(sidecar)
    remove_commands(target.folder / "command", change, set())  # the legacy folder an older ctxmill used
    write_commands(target.commands, opencode_commands(command), change, new)
    if warning := _edit_config(target.config_file(), command, change, new):
        warnings.append(warning)
    save_manifest(target.manifest, set(new))
    return change, warnings


def uninstall_opencode(target: OpenCodeTarget) -> tuple[Change, list[str]]:
    from ctxmill.opencode_plugin import MARK as PLUGIN_MARK

    change, warnings = Change(), []
    created = manifest(target.manifest)
    for path in (target.plugin, target.plugin.with_name(COMMAND_FILE)):
        if path.exists() and (path.name == COMMAND_FILE or PLUGIN_MARK in path.read_text("utf-8", errors="replace")):
            path.unlink()
            change.removed.append(path)
    remove_commands(target.commands, change, created)
    remove_commands(target.folder / "command", change, set())
    if warning := _edit_config(target.config_file(), None, change, list(created)):
        warnings.append(warning)
    for folder in (target.plugin.parent, target.folder):
        if str(folder) in created and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            change.removed.append(folder)
    target.manifest.unlink(missing_ok=True)
    return change, warnings


def opencode_status(target: OpenCodeTarget) -> list[str]:
    """Problems of an installation, each saying what is missing ([] when complete)."""
    from ctxmill.opencode_plugin import PLUGIN
    from ground.jsonc import loads

    problems = []
    if not target.plugin.exists():
        problems.append(f"plugin missing: {target.plugin}")
    elif target.plugin.read_bytes() != PLUGIN.read_bytes():
        problems.append(f"plugin {target.plugin} differs from this ctxmill's (re-run install)")
    config = target.config_file()
    try:
        if "ctxmill" not in ((loads(config.read_text("utf-8")) if config.exists() else {}).get("mcp") or {}):
            problems.append(f"MCP server not registered in {config}")
    except (ValueError, AttributeError) as exc:
        problems.append(f"{config} is not valid JSONC ({exc})")
    for name in ("checkpoint.md", "dream.md"):
        if not (target.commands / name).exists():
            problems.append(f"slash command file missing: {target.commands / name}")
    return problems


def installed_mcp(target: OpenCodeTarget) -> list[str] | None:
    from ground.jsonc import loads

    try:
        entry = (loads(target.config_file().read_text("utf-8")).get("mcp") or {}).get("ctxmill")
    except (OSError, ValueError, AttributeError):
        return None
    command = entry.get("command") if isinstance(entry, dict) else None
    return command if isinstance(command, list) and all(isinstance(c, str) for c in command) else None
