"""How the raw replay's cost model compares with the usage the provider reported."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from compress.formats.sessions.transcript import Transcript
from compress.provider_cache import READ_PRICE, WRITE_PRICE
from compress.tiers import NATIVE_1M, REFERENCE_WINDOW, known_window
from replay.pricing import Priced


@dataclass
class UsageCheck:
    """How the raw replay's model compares with what the provider reported.

    The recording lacks the host's system prompt and tools, so their size (`unseen_head`) is
    estimated as the median gap between reported and modelled input; the unseen head is taken
    as cached after the first request."""

    compared: int = 0
    unseen_head: int = 0
    median_abs_error: float = 0.0
    """Median |modelled + unseen_head - reported| / reported input tokens, per request."""
    modelled_cost: float = 0.0
    reported_cost: float = 0.0
    cost_ratio: float = 0.0
    """modelled / reported cost over the compared requests (1.0 = the model is exact)."""
    modelled_read_share: float = 0.0
    reported_read_share: float = 0.0


def check_usage(pairs: list[tuple[Priced, Any]]) -> UsageCheck | None:
    """`pairs`: the raw pricing of a request and the provider usage of the same call."""
    if not pairs:
        return None
    unseen = max(0, round(statistics.median(u.prompt_total - p.tokens for p, u in pairs)))
    errors = [abs(p.tokens + unseen - u.prompt_total) / u.prompt_total for p, u in pairs if u.prompt_total]
    modelled = reported = read_m = read_r = total_m = total_r = 0.0
    for i, (p, u) in enumerate(pairs):
        head_read = unseen if i else 0
        modelled += p.cost + READ_PRICE * head_read + WRITE_PRICE * (unseen - head_read)
        reported += u.input + READ_PRICE * u.cache_read + WRITE_PRICE * u.cache_write
        read_m += p.cache.read + head_read
        total_m += p.tokens + unseen
        read_r += u.cache_read
        total_r += u.prompt_total
    return UsageCheck(len(pairs), unseen, round(statistics.median(errors), 4) if errors else 0.0,
                      round(modelled, 1), round(reported, 1), round(modelled / reported, 4) if reported else 0.0,
                      round(read_m / total_m, 4) if total_m else 0.0, round(read_r / total_r, 4) if total_r else 0.0)


@dataclass
class ReportedSize:
    """The provider's count of a session's next request, as a live client calibrates it: the
    prompt tokens the provider reported for the last call with usage, plus what the raw request
    grew by since (the replay's own count). So the pipeline's tiers follow the provider's count
    of what is sent, the host's unseen system prompt and tools included, as in the proxy."""

    last: tuple[int, int] | None = None
    """(reported prompt tokens, modelled tokens) of the last call with usage."""

    def next(self, tokens: int) -> int | None:
        """The provider's count of a request the replay counts `tokens` (None: no usage yet)."""
        return None if self.last is None else max(1, self.last[0] + tokens - self.last[1])

    def saw(self, tokens: int, usage: Any) -> None:
        """A call the replay counts `tokens` whose provider reported `usage` (None: nothing)."""
        if usage is not None and usage.prompt_total > 0:
            self.last = (usage.prompt_total, tokens)


def client_window(transcript: Transcript) -> int | None:
    """The context window the client ran with, as its recording shows it: the one it reported
    (Codex's), else 1M when the provider counted more than the model's window (the model table's,
    else 200K) in one of its requests: the client asked for the long-context beta, which a live
    proxy reads from the request's header. None: the model table's applies. (Of the corpus's
    Claude Code sessions on Opus and Sonnet 4.6, 7 reported 201K-397K prompt tokens.)"""
    if transcript.context_window:
        return transcript.context_window
    model = str(transcript.head.get("model", ""))
    window = known_window(model) or REFERENCE_WINDOW
    counted = max((c.usage.prompt_total for c in transcript.calls if c.usage is not None), default=0)
    return NATIVE_1M if counted > window else None

