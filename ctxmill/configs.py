"""Engine configuration objects built from the face's paths (engines never read the environment)."""

from __future__ import annotations

from pathlib import Path

from ctxmill import paths


def memory_config(project_home: Path | None = None):
    from memory.config import MemoryConfig

    global_home = paths.global_home()
    return MemoryConfig(project_home=project_home or paths.project_home(), global_home=global_home,
                        cache_dir=global_home / "cache")


def checkpoint_config(project_home: Path | None = None):
    from memory.checkpoint import CheckpointConfig

    memory = memory_config(project_home)
    return CheckpointConfig(memory=memory, ccr_dir=paths.ccr_dir(memory.project_home))
