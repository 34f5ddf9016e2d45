"""ProxyConfig: everything the proxy needs, built by the CLI (faces read env, engines never)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from compress.config import CompressConfig
from compress.pipeline import Chain

ANTHROPIC_API = "https://api.anthropic.com"
OPENAI_API = "https://api.openai.com"
DEFAULT_PORT = 8787
DEFAULT_MAX_BODY = 64 * 2**20


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
    """The stages to run (None: compress.pipeline.DEFAULT_STAGES). Shared by all requests: do not
    edit it while the proxy runs."""
    max_body_bytes: int = DEFAULT_MAX_BODY
    max_sessions: int = 256
    """Sessions kept in memory (least recently used beyond this are dropped; on disk they stay)."""
    max_stats: int = 4096
    pipeline_threads: int = 4
    """Pipeline runs at once. They share the GIL, so more threads add no throughput, but a few let a
    1 ms incremental run finish beside a 150 ms epoch instead of queueing behind it."""
    connect_timeout: float = 10.0
    read_timeout: float = 600.0
    """Longest silence from the upstream while a response streams (LLM turns can be slow)."""
