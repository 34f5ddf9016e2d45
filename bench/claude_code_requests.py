"""The corpus's Claude Code sessions as request bodies, read by `compress.formats.sessions`.

For benchmarks and golden tests: `session_request(path)` is the whole session (its peak) as one
Anthropic request; `session_messages(path)` its messages.
"""

from __future__ import annotations

from pathlib import Path

from compress.formats.sessions import read_session


def claude_code_sessions(root: Path | None = None) -> list[Path]:
    """The claude-code transcripts under the corpus `root` (default: the shared corpus; [] when absent)."""
    if root is None:
        from bench.token_corpus import corpus_dir

        root = corpus_dir()
    return sorted((root / "transcripts" / "claude-code").glob("*.jsonl")) if root else []


def session_request(path: Path, max_messages: int | None = None) -> dict:
    return read_session(path).whole(max_messages)


def session_messages(path: Path) -> list[dict]:
    return read_session(path).messages
