"""The map's settings (`[map]` in config.toml), apart from the engine, so reading the settings
imports no part of the map (a prompt in a repository with no index yet needs none)."""

from __future__ import annotations

from ground.records import Record


class RepoMapConfig(Record, slots=False):  # its defaults are read off the class (ctxmill.provenance)
    enabled: bool = True
    """Whether each prompt of a hooked client gets a map."""
    budget: int = 512
    """Tokens the map may take in a prompt's context."""
