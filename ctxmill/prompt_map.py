"""The repository map a hooked prompt carries (UserPromptSubmit; `repomap`).

The map goes with the person's prompt, never into older messages, so the provider's cached
prefix stays as it was. It is built only inside a repository (a folder with `.git` or
`.ctxmill`), ranked with the files the session touched most recently (read from the tail of its
transcript), and left out when it would name the same files as the map this session was last
given, or while the repository's first index is still being built (`INDEX_SECONDS` a prompt). Its index (SQLite) and that last-map record live in the user's cache folder, keyed by the
repository's path, so mapping writes nothing into the repository.
"""

from __future__ import annotations

from pathlib import Path

TRANSCRIPT_TAIL_BYTES = 256 * 1024
INDEX_SECONDS = 0.8
"""Time a prompt may spend indexing changed files; a larger first index goes on at the next
prompts (the hook's own budget is 2 s), and the map is given once the index is complete."""


def recent_files(transcript: str | None) -> list[str]:
    """Paths the session's latest tool calls named, most recent first (a bounded tail read)."""
    import orjson

    from compress.vocab.tools import PATH_KEYS

    if not transcript:
        return []
    try:
        with open(transcript, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - TRANSCRIPT_TAIL_BYTES))
            tail = f.read(TRANSCRIPT_TAIL_BYTES)
    except OSError:
        return []
    found: list[str] = []
    for line in reversed(tail.splitlines()[1:] if size > TRANSCRIPT_TAIL_BYTES else tail.splitlines()):
        try:
            record = orjson.loads(line)
            content = record["message"]["content"]
        except (ValueError, KeyError, TypeError):
            continue
        for block in reversed(content) if isinstance(content, list) else ():
            tool_input = block.get("input") if isinstance(block, dict) and block.get("type") == "tool_use" else None
            if isinstance(tool_input, dict):  # the file a file tool names: its first path key present
                found.extend(next(([v] for k in PATH_KEYS if isinstance(v := tool_input.get(k), str)), []))
    return list(dict.fromkeys(found))


def prompt_map(event: dict, prompt: str, settings) -> str:
    """The map text for this prompt, or "" (disabled, not a repository, nothing new to show)."""
    import time

    import xxhash

    from ctxmill.paths import project_root
    from ground.files import atomic_write
    from repomap.api import build_map, relative_paths

    config = settings.repomap
    cwd = event.get("cwd")
    if not config.enabled or config.budget <= 0 or not isinstance(cwd, str) or not cwd:
        return ""
    root = project_root(Path(cwd))
    if not ((root / ".git").exists() or (root / ".ctxmill").is_dir()):
        return ""
    cache = settings.global_home / "cache" / "repomap" / xxhash.xxh3_64_hexdigest(str(root).encode())
    recent = relative_paths(root, recent_files(event.get("transcript_path")))
    result = build_map(root, prompt, recent, config.budget, cache.with_suffix(".sqlite3"),
                       deadline=time.monotonic() + INDEX_SECONDS)
    if not result.files:
        return ""
    shown = f"{event.get('session_id')}\n" + "\n".join(result.files)
    last = cache.with_suffix(".last")
    try:
        if last.read_text(encoding="utf-8") == shown:
            return ""
    except (OSError, UnicodeDecodeError):
        pass
    atomic_write(last, shown.encode(), fsync=False)
    return result.text
