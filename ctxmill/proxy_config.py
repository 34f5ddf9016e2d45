"""`ProxyConfig`, everything the proxy runs with, and its defaults: built by `ctxmill proxy` from
its flags and `Settings.proxy_overrides` (the `[proxy]` table). Apart from `ctxmill.settings`, so a
hook, which reads the settings, never builds the proxy's config class."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ccr.store import Retention
    from compress.config import CompressConfig
    from compress.runner.pipeline import Chain
    from ground.redis_client import StoreAddress

ANTHROPIC_API = "https://api.anthropic.com"
OPENAI_API = "https://api.openai.com"
DEFAULT_PORT = 8787
DEFAULT_MAX_BODY = 64 * 2**20
DEFAULT_LATENCY_BUDGET_MS = 25.0
DEFAULT_MAX_INFLIGHT = 256 * 2**20
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_IDLE_SECONDS = 600.0
"""A session with no run for this long leaves its worker's memory (`ProxyConfig.idle_seconds`)."""


def default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


@dataclass(frozen=True)
class ProxyConfig:
    """Everything the proxy runs with, built by `ctxmill proxy` from its flags and `Settings`."""

    upstream_anthropic: str = ANTHROPIC_API
    upstream_openai: str = OPENAI_API
    """Origins (optionally with a path prefix) the request path is appended to."""
    home: Path | None = None
    """ctxmill home: sessions under sessions_dir(home). None with persist=False keeps everything
    in memory (tests, benchmarks)."""
    ccr_dir: Path | None = None
    """Where originals are stored (None: the user's store, `paths.user_ccr_dir()`, which every face
    reads, so the proxy's markers expand from any project)."""
    persist: bool = True
    compress: CompressConfig = field(default_factory=lambda: _compress_config())
    ccr: Retention | None = None
    """The CCR store's retention (None: the store's defaults)."""
    store: StoreAddress | None = None
    """A shared Redis store for session state and originals, so replicas render the same bytes
    (None: files under `home` and the SQLite CCR store)."""
    chain: Chain | None = None
    """The stages to run (None: compress.runner.pipeline.DEFAULT_STAGES). Sent to each worker process
    when it starts, so every stage function must be a module-level (picklable) function."""
    max_body_bytes: int = DEFAULT_MAX_BODY
    max_sessions: int = 256
    """Sessions kept in memory (least recently used beyond this are dropped; on disk they stay)."""
    new_sessions_per_hour: int = 100
    """New session folders created in any hour; beyond it new sessions stay in memory only."""
    max_stats: int = 4096
    workers: int = field(default_factory=default_workers)
    """Worker processes that run the pipeline (a session always goes to the same one)."""
    latency_budget_ms: float | None = DEFAULT_LATENCY_BUDGET_MS
    """Longest wait for a request's compression; past it the original bytes are sent and the run
    finishes in the background (its state serves the session's next request). None: always wait."""
    connect_timeout: float = 10.0
    read_timeout: float = 600.0
    """Longest silence from the upstream while a response streams (LLM turns can be slow)."""
    client_timeout: float = 20.0
    """Longest a client may stall while sending its request: its headers must be complete this
    long after it connected (or after its previous response), its body may pause this long
    between chunks, and a body waits this long for room among the in-flight bytes."""
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    """Client connections open at once; beyond it the one waiting longest without a request is
    closed (see ctxmill.proxy.connections)."""
    max_inflight_bytes: int = DEFAULT_MAX_INFLIGHT
    """Request bodies held at once, in total (see ctxmill.proxy.inflight); at least max_body_bytes."""
    ledger_file: Path | None = None
    """The savings ledger each request is added to (None: the user's, `paths.ledger_file()`);
    with persist=False no ledger is written."""
    log_file: Path | None = None
    """Where the proxy and its workers log besides stderr (`--log-file`)."""
    log_level: str = "info"
    save_delay: float = 0.0
    """Seconds each worker waits between a run's answer and writing its state: 0; only
    bench/gateway.py sets it (CTXMILL_SAVE_DELAY_MS) to force the race between replicas."""
    idle_seconds: float = DEFAULT_IDLE_SECONDS
    """A session with no run for this long leaves its worker's memory (its state stays at its
    place; its next run reloads it, so the same bytes). `DEFAULT_IDLE_SECONDS`; only the benches
    lower it (CTXMILL_IDLE_SECONDS), to reach a steady gateway's memory in minutes."""

    def __post_init__(self) -> None:
        if not self.idle_seconds > 0:
            raise ValueError(f"the idle time must be positive, got {self.idle_seconds}")
        if self.max_inflight_bytes < self.max_body_bytes:
            raise ValueError(f"the in-flight limit ({self.max_inflight_bytes:,} bytes) must be at least the largest "
                             f"body accepted ({self.max_body_bytes:,} bytes)")


def _compress_config() -> CompressConfig:
    from compress.config import CompressConfig

    return CompressConfig()
