"""What one pipeline run did: `RunReport` (the CLI's summary line and `--json`), `RunResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunReport:
    provider: str = ""
    tier: str = ""
    mode: str = "passthrough"  # epoch | incremental | passthrough
    epoch_reason: str = ""
    passthrough_reason: str = ""
    """Why a readable request was sent unchanged (mode passthrough, no error)."""
    provider_context: str = ""
    """What of the request the provider's own context management drops or clears, which
    ctxmill therefore left as it was ('' when nothing)."""
    tokens_before: int = 0
    tokens_after: int = 0
    messages: int = 0
    frozen: int = 0
    stages_saved: dict[str, int] = field(default_factory=dict)
    stage_ms: dict[str, float] = field(default_factory=dict)
    decisions: list[tuple[int, str, str]] = field(default_factory=list)
    ccr_written: int = 0
    errors: list[str] = field(default_factory=list)
    error: str = ""
    duration_ms: float = 0.0

    def summary_line(self) -> str:
        if self.error or self.passthrough_reason:
            return f"passed through unchanged: {self.error or self.passthrough_reason}"
        saved = self.tokens_before - self.tokens_after
        pct = 100.0 * saved / self.tokens_before if self.tokens_before else 0.0
        applied = ", ".join(f"{k} {-v:+,}" for k, v in self.stages_saved.items() if v) or "none"
        epoch = f" ({self.epoch_reason})" if self.mode == "epoch" else ""
        return (f"{self.tokens_before:,} → {self.tokens_after:,} tokens (-{pct:.1f}%) · tier {self.tier}"
                f" · {self.mode}{epoch} · stages: {applied} · {self.ccr_written} CCR entries"
                f" · {self.duration_ms:.1f} ms")

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider, "tier": self.tier, "mode": self.mode,
            "epoch_reason": self.epoch_reason, "passthrough_reason": self.passthrough_reason,
            "provider_context": self.provider_context,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after, "messages": self.messages, "frozen": self.frozen,
            "stages_saved": self.stages_saved, "stage_ms": self.stage_ms,
            "decisions": [{"message": i, "stage": s, "decision": d} for i, s, d in self.decisions],
            "ccr_written": self.ccr_written, "errors": self.errors, "error": self.error,
            "duration_ms": round(self.duration_ms, 3),
        }


@dataclass
class RunResult:
    body: Any
    report: RunReport
