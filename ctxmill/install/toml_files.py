"""TOML files install edits and uninstall restores: Codex's `config.toml` and `[proxy]` in
`<global home>/config.toml` (where the always-on proxy reads its upstreams).

What must hold: an edit keeps the file's comments, order and formatting (tomlkit); the first
change to a file ctxmill did not create backs it up, bytes and mode (`ctxmill.install.backups`);
uninstall gives the backup back byte for byte when what is left means the same as it, deletes a
file it created and left empty, and otherwise writes what is left. A file that is not valid TOML
is never changed (ValueError naming it).
"""

from __future__ import annotations

import tomllib
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ctxmill.install.backups import back_up, backup_of, restore_backup
from ctxmill.install.claude_code import Change


def load(path: Path):
    """The document at `path` (an empty one when the file does not exist)."""
    import tomlkit

    if not path.exists():
        return tomlkit.document()
    text = path.read_text("utf-8")
    try:
        return tomlkit.parse(text)
    except Exception as exc:  # noqa: BLE001 - tomlkit's parse errors share no public base class
        raise ValueError(f"{path} is not valid TOML ({exc})") from None


def write(path: Path, doc, change: Change, created: Collection[str] = ()) -> None:
    from ground.files import atomic_write

    back_up(path, created)
    atomic_write(path, doc.as_string().encode("utf-8"))
    change.written.append(path)


def drop_or_write(path: Path, doc, change: Change) -> None:
    """Uninstall's write (see the module's rules); a file without a backup was created by ctxmill."""
    text = doc.as_string()
    if not tomllib.loads(text) and not backup_of(path).exists():
        path.unlink(missing_ok=True)
        change.removed.append(path)
    elif restore_backup(path, lambda backup: tomllib.loads(backup.read_text("utf-8")) == tomllib.loads(text)):
        change.written.append(path)
    else:
        write(path, doc, change)


def plain(value: Any) -> Any:
    """A tomlkit value as plain Python (for comparing and for the manifest)."""
    return value.unwrap() if hasattr(value, "unwrap") else value


def keep_upstream(config: Path, key: str, url: str | None, change: Change) -> tuple[str | None, str | None]:
    """Set `[proxy] key = url` in the proxy's config file unless it already names an upstream.
    (the value install set or None, a warning or None)."""
    import tomlkit

    if not url:
        return None, None
    doc = load(config)
    proxy = doc.get("proxy")
    have = plain(proxy.get(key)) if proxy is not None else None
    if have is not None:
        warning = None if have.rstrip("/") == url.rstrip("/") else \
            f"{config} already sends [proxy] {key} to {have}; {url} is not used"
        return None, warning
    if proxy is None:
        doc["proxy"] = proxy = tomlkit.table()
    ours_only = all(name == "proxy" for name in doc) and all(k.startswith("upstream_") for k in proxy)
    proxy[key] = url.rstrip("/")
    write(config, doc, change, [str(config)] if ours_only else [])  # a file holding only upstreams is ours
    return url.rstrip("/"), None


def drop_upstream(config: Path, key: str, value: str | None, change: Change) -> None:
    """Remove `[proxy] key` if it still holds `value`, the one install set."""
    if not value or not config.exists():
        return
    doc = load(config)
    proxy = doc.get("proxy")
    if proxy is None or plain(proxy.get(key)) != value:
        return
    del proxy[key]
    if not proxy:
        del doc["proxy"]
    drop_or_write(config, doc, change)
