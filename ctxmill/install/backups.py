"""Backups of the client files `ctxmill install` changes (settings that may hold API keys).

What must hold: a file ctxmill did not create is copied to `<file>.ctxmill.bak` before ctxmill
first changes it, bytes and mode (a 0600 file's backup is 0600 from its first byte), never
through a link, and an existing backup is kept; uninstall puts the backup back only when what it
would write means the same, so the person's file comes back byte for byte.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path


def backup_of(path: Path) -> Path:
    return path.with_name(path.name + ".ctxmill.bak")


def back_up(path: Path, created: Collection[str] = ()) -> None:
    """Before the first change to a file ctxmill did not create, copy it to `backup_of(path)`
    with the original's mode (these files hold API keys: a 0600 file's backup is 0600 from
    its first byte); a backup already there is kept."""
    from ground.files import copy_keeping_mode

    backup = backup_of(path)
    if path.exists() and not os.path.lexists(backup) and str(path) not in created:
        copy_keeping_mode(path, backup)


def restore_backup(path: Path, same_as_backup) -> bool:
    """Put the backup back in place of `path` (byte-identical, its mode too) when
    `same_as_backup(backup)` says the content about to be written means the same; True if so."""
    backup = backup_of(path)
    try:
        if not backup.is_file() or backup.is_symlink() or not same_as_backup(backup):
            return False
    except (OSError, ValueError):
        return False
    backup.replace(path)
    return True
