"""ProxyConfig: everything the proxy needs, built by the CLI (faces read env, engines never)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from compress.config import CompressConfig
from compress.pipeline import Chain

ANTHROPIC_API = "https://api.anthropic.com"
OPENAI_API = "https://api.openai.com"
DEFAULT_PORT = 8787
DEFAULT_MAX_BODY = 64 * 2**20
DEFAULT_LATENCY_BUDGET_MS = 25.0


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


@dataclass(frozen=True)
class ProxyConfig:
    upstream_anthropic: str = ANTHROPIC_API
    upstream_openai: str = OPENAI_API
    """Origins (optionally with a path prefix) the request path is appended to."""
    home: Path | None = None
    """ctxmill home: sessions under sessions_dir(home), originals in ccr_dir(home).
    None with persist=False keeps everything in memory (tests, benchmarks)."""
    persist: bool = True
    compress: CompressConfig = field(default_factory=CompressConfig)
    chain: Chain | None = None
    """The stages to run (None: compress.pipeline.DEFAULT_STAGES). Sent to each worker process
    when it starts, so every stage function must be a module-level (picklable) function."""
    max_body_bytes: int = DEFAULT_MAX_BODY
    max_sessions: int = 256
    """Sessions kept in memory (least recently used beyond this are dropped; on disk they stay)."""
    max_stats: int = 4096
    workers: int = field(default_factory=default_workers)
    """Worker processes that run the pipeline (a session always goes to the same one)."""
    latency_budget_ms: float | None = DEFAULT_LATENCY_BUDGET_MS
    """Longest wait for a request's compression; past it the original bytes are sent and the run
    finishes in the background (its state serves the session's next request). None: always wait."""
    connect_timeout: float = 10.0
    read_timeout: float = 600.0
    """Longest silence from the upstream while a response streams (LLM turns can be slow)."""
