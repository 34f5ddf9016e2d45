"""The one typed configuration object of the transform. Faces build it; engines only read it."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping, TypeVar

from compress.tiers import TierThresholds

PROTECTED_TOOLS = frozenset({
    "edit", "write", "multiedit", "notebookedit", "apply_patch", "str_replace_based_edit_tool",
    "todowrite", "todoread", "todo_write", "question", "askuserquestion", "exitplanmode",
    "deep_expand", "task", "agent", "skill",
})
"""Tools whose results are never compressed (compared lower-cased; memory_* and mcp__*__memory_*
and mcp__*__deep_expand are matched by `is_protected_tool`)."""


@dataclass(frozen=True)
class CompressConfig:
    tiers: TierThresholds = TierThresholds()
    model_tiers: Mapping[str, TierThresholds] = field(default_factory=dict)
    epoch_savings_threshold: int = 20_000
    """A new epoch starts when a full re-run would save at least this many tokens."""
    protect_tail_tokens: int = 4_000
    protect_tail_turns: int = 2
    """The newest messages holding this many tokens and at least this many assistant turns are
    never compressed."""
    min_saving_fraction: float = 0.15
    min_saving_chars: int = 200
    """A lossy result is kept only if it saves both this fraction and this many characters."""
    protected_tools: frozenset[str] = PROTECTED_TOOLS
    disabled_stages: frozenset[str] = frozenset()
    stage_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per-stage knobs by stage name; each stage documents its own keys and defaults."""

    def options(self, stage: str) -> Mapping[str, Any]:
        return self.stage_options.get(stage, {})


def is_protected_tool(name: str, config: CompressConfig) -> bool:
    low = name.lower()
    base = low.rsplit("__", 1)[-1] if low.startswith("mcp__") else low
    return base in config.protected_tools or base.startswith("memory_") or "deep_expand" in base


T = TypeVar("T")


def options_as(cls: type[T], options: Mapping[str, Any]) -> T:
    """A stage's options dataclass `cls` from its `config.options(...)` mapping; keys that are
    not fields of `cls` are ignored, missing ones keep their defaults."""
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in options.items() if k in known})
