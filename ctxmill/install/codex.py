"""Install ctxmill into Codex (user scope: `$CODEX_HOME/config.toml`, default `~/.codex/`), and
undo exactly that.

Install adds the MCP server `[mcp_servers.ctxmill]` (Codex starts it with every session, and it
starts the always-on proxy: `ctxmill.always_on`) and, with a proxy URL, marks it `required`
(`GATE`) and sends Codex's model requests through the proxy: a provider
`[model_providers.ctxmill]` selected by `model_provider`. It is the provider Codex used until then
with only its `base_url` changed (so its key, headers and wire API stay), or, for the built-in OpenAI provider, one that signs in as it does
(`requires_openai_auth`: the key of `codex login --with-api-key`). Speaking plain HTTP, it never
tries the websockets the built-in provider would. The base URL it had (`OPENAI_BASE_URL` for the
built-in one) becomes the proxy's `upstream_openai`.

What must hold: no secret is written (keys stay where they were: Codex's login or the variable
`env_key` names); installing twice equals once; uninstall puts back the `model_provider` it
replaced and gives the file back byte for byte when nothing else changed (`ctxmill.install.toml_files`).
A ChatGPT sign-in talks to chatgpt.com, not to an API the proxy forwards to: install leaves
Codex's provider alone then, and says so.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ctxmill.install import toml_files
from ctxmill.install.claude_code import Change, manifest_extra, save_manifest

PROVIDER = "ctxmill"
BUILT_IN = "openai"
GATE = {"required": True, "startup_timeout_sec": 30}
"""With the proxy: the MCP server is the one thing of ctxmill's that runs before Codex's first
request (`ctxmill.commands.mcp`), so Codex must wait for it (it starts the proxy: up to 8 s on a
busy machine) and must not go on when it refuses the port (another user's program listens there)."""


@dataclass(frozen=True)
class CodexTarget:
    config: Path
    auth: Path
    manifest: Path

    @classmethod
    def for_user(cls, ctxmill_home: Path) -> CodexTarget:
        codex_home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
        return cls(codex_home / "config.toml", codex_home / "auth.json", ctxmill_home / "installed-codex.json")


def _chatgpt_sign_in(auth: Path) -> bool:
    try:
        data = json.loads(auth.read_text("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and bool(data.get("tokens")) and not data.get("OPENAI_API_KEY")


def _provider(doc, current: str, proxy_url: str, auth: Path) -> tuple[dict | None, str | None, str | None]:
    """(the ctxmill provider's table, the upstream it replaces, a warning): no table when Codex's
    requests cannot go through the proxy."""
    base = f"{proxy_url}/v1"
    if current == BUILT_IN:
        if _chatgpt_sign_in(auth):
            return None, None, ("Codex is signed in with ChatGPT, whose requests go to chatgpt.com: always-on "
                                "compression needs an API key (`codex login --with-api-key`); Codex left as it was")
        upstream = (os.environ.get("OPENAI_BASE_URL") or "").rstrip("/").removesuffix("/v1") or None
        return ({"name": PROVIDER, "base_url": base, "wire_api": "responses", "requires_openai_auth": True},
                upstream, None)
    theirs = toml_files.plain(doc.get("model_providers", {}).get(current))
    url = (theirs or {}).get("base_url") if isinstance(theirs, dict) else None
    if not isinstance(url, str) or not url.rstrip("/").endswith("/v1"):
        return None, None, (f"Codex's provider {current!r} has no base_url ending in /v1 for the proxy to stand in "
                            "for; Codex left as it was")
    return {**theirs, "name": PROVIDER, "base_url": base}, url.rstrip("/").removesuffix("/v1"), None


def install_codex(target: CodexTarget, command: list[str], proxy_url: str | None) -> tuple[Change, list[str]]:
    """The MCP server, and with `proxy_url` the provider (see the module); (what changed, warnings).
    `Change.upstream`: the base URL Codex used, for the proxy to forward to."""
    import tomlkit

    change, warnings = Change(), []
    extra = manifest_extra(target.manifest)
    created = extra.get("created_config", not target.config.exists())
    doc = toml_files.load(target.config)
    servers = doc.setdefault("mcp_servers", tomlkit.table(is_super_table=True))
    servers["ctxmill"] = {"command": command[0], "args": [*command[1:], "mcp"]}
    current = toml_files.plain(doc.get("model_provider", BUILT_IN))
    replaced = extra["model_provider"] if current == PROVIDER and "model_provider" in extra else \
        toml_files.plain(doc.get("model_provider"))
    if proxy_url:
        table, change.upstream, warning = _provider(doc, replaced or BUILT_IN, proxy_url, target.auth)
        warnings += [warning] if warning else []
    else:
        table = None
    if table is None:
        _unselect(doc, replaced)
        extra = {"created_config": created}
    else:
        doc.setdefault("model_providers", tomlkit.table(is_super_table=True))[PROVIDER] = table
        doc["model_provider"] = PROVIDER
        servers["ctxmill"].update(GATE)  # Codex waits for it, and starts no session it refuses
        change.proxied = True
        extra = {"created_config": created, "model_provider": replaced}
    toml_files.write(target.config, doc, change, [str(target.config)] if created else [])
    save_manifest(target.manifest, set(), **extra)
    return change, warnings


def _unselect(doc, replaced: str | None) -> None:
    """Codex's own provider selected again and ctxmill's gone."""
    if toml_files.plain(doc.get("model_provider")) == PROVIDER:
        if replaced is None:
            del doc["model_provider"]
        else:
            doc["model_provider"] = replaced
    providers = doc.get("model_providers")
    if providers is not None and PROVIDER in providers:
        del providers[PROVIDER]
        if not providers:
            del doc["model_providers"]


def uninstall_codex(target: CodexTarget) -> Change:
    change = Change()
    extra = manifest_extra(target.manifest)
    if target.config.exists():
        doc = toml_files.load(target.config)
        _unselect(doc, extra.get("model_provider"))
        servers = doc.get("mcp_servers")
        if servers is not None and "ctxmill" in servers:
            del servers["ctxmill"]
            if not servers:
                del doc["mcp_servers"]
        toml_files.drop_or_write(target.config, doc, change)
    target.manifest.unlink(missing_ok=True)
    return change


def installed_mcp(target: CodexTarget) -> list[str] | None:
    """The command line of the installed `ctxmill` MCP server (None when not registered)."""
    try:
        entry = toml_files.plain(toml_files.load(target.config).get("mcp_servers", {}).get("ctxmill"))
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return None
    return [entry["command"], *[a for a in entry.get("args", []) if isinstance(a, str)]]


def codex_status(target: CodexTarget, proxy_url: str | None) -> list[str]:
    """Problems of the installation, each with how to fix it ([] when complete)."""
    try:
        doc = toml_files.load(target.config)
    except (OSError, ValueError) as exc:
        return [str(exc)]
    problems = [] if installed_mcp(target) else [f"MCP server not registered in {target.config}"]
    if proxy_url:
        provider = toml_files.plain(doc.get("model_providers", {}).get(PROVIDER)) or {}
        if toml_files.plain(doc.get("model_provider")) != PROVIDER or provider.get("base_url") != f"{proxy_url}/v1":
            problems.append(f"{target.config} does not send Codex's requests to {proxy_url}/v1")
    return problems
