"""The repository map a hooked prompt carries (UserPromptSubmit; `repomap`).

The map goes with the person's prompt, never into older messages, so the provider's cached
prefix stays as it was. Must hold:
- it is built only inside a repository (a folder with `.git` or `.ctxmill`), ranked with the
  files the session touched most recently (read from the tail of its transcript);
- a prompt never waits for the repository's index: the hook uses the index as it is (bringing
  only the session's recent files and the paths the prompt names up to date) and, when no refresh
  of the index started in the last `STALE_SECONDS` (none yet, or the last one is older), starts
  `ctxmill map --index` in the background (one at a time: it takes a lock; at low CPU priority),
  so the prompts that follow while it runs start no process (but those of the moment before it
  creates the index, whose refresh finds the lock taken and ends); until the first index is
  complete there is no map, and before it exists the prompt does not even import `repomap`; a
  file the session changed is not parsed by the prompt (loading a parser costs a process
  ~0.1 s): it is named by its path and a refresh is started to read it;
- it is left out when it names nothing better than the last map this session was given: every
  one of its first `HEAD_FILES` files was named by that map;
- any failure of the map leaves the prompt's other context (memory hits) as it is: no map.
Its index (SQLite), lock and last-map record live in the user's cache folder, keyed by the
repository's path, so mapping writes nothing into the repository. `ctxmill map` prints the same
text for the same prompt and recent files.
"""

from __future__ import annotations

from pathlib import Path

TRANSCRIPT_TAIL_BYTES = 256 * 1024
STALE_SECONDS = 30.0
HEAD_FILES = 10


def recent_files(transcript: str | None) -> list[str]:
    """Paths the session's latest tool calls named, most recent first (a bounded tail read).
    Only lines that name a tool call are parsed, with the stdlib's JSON, which the hook's process
    has loaded (orjson imports `dataclasses`, `uuid` and `platform`: ~10 ms of a prompt)."""
    import json

    from compress.vocab.input_keys import PATH_KEYS

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
    for line in reversed(
        tail.splitlines()[1:] if size > TRANSCRIPT_TAIL_BYTES else tail.splitlines()
    ):
        if b'"tool_use"' not in line:
            continue
        try:
            record = json.loads(line)
            content = record["message"]["content"]
        except (ValueError, KeyError, TypeError):
            continue
        for block in reversed(content) if isinstance(content, list) else ():
            tool_input = (
                block.get("input")
                if isinstance(block, dict) and block.get("type") == "tool_use"
                else None
            )
            if isinstance(
                tool_input, dict
            ):  # the file a file tool names: its first path key present
                found.extend(
                    next(([v] for k in PATH_KEYS if isinstance(v := tool_input.get(k), str)), [])
                )
    return list(dict.fromkeys(found))


def cache_of(global_home: Path, root: Path) -> Path:
    """The repository's cache files' common stem (`.sqlite3` the index, `.lock`, `.last`)."""
    import xxhash

    return global_home / "cache" / "repomap" / xxhash.xxh3_64_hexdigest(str(root).encode())


def repository(cwd: Path) -> Path | None:
    from ctxmill.paths import project_root

    root = project_root(cwd)
    return root if (root / ".git").exists() or (root / ".ctxmill").is_dir() else None


def map_for(root: Path, prompt: str, transcript: str | None, budget: int, cache: Path, wait: bool):
    """The `repomap.api.RepoMap` for this prompt (what the hook and `ctxmill map` both print)."""
    from repomap.api import build_map, relative_paths

    recent = relative_paths(root, recent_files(transcript))
    return build_map(root, prompt, recent, budget, cache.with_suffix(".sqlite3"), wait=wait)


def prompt_map(event: dict, prompt: str, settings) -> str:
    """The map text for this prompt, or "" (disabled, not a repository, not indexed yet, nothing
    better to show, or the map failed)."""
    try:
        return _prompt_map(event, prompt, settings)
    except Exception:  # noqa: BLE001 - the map is an extra: the prompt's memory hits must survive it
        return ""


def _prompt_map(event: dict, prompt: str, settings) -> str:
    import time

    from ground.files import atomic_write

    config = settings.repomap
    cwd = event.get("cwd")
    if not config.enabled or config.budget <= 0 or not isinstance(cwd, str) or not cwd:
        return ""
    root = repository(Path(cwd))
    if root is None:
        return ""
    cache = cache_of(settings.global_home, root)
    if not cache.with_suffix(".sqlite3").exists():  # a new repository: nothing to map, nor to import
        index_in_background(root)
        return ""
    result = map_for(root, prompt, event.get("transcript_path"), config.budget, cache, wait=False)
    if result.indexed_at is None or time.time() - result.indexed_at > STALE_SECONDS or result.stale:
        index_in_background(root)  # none started lately, or the session changed files it must read
    if not result.files:
        return ""
    session = f"{event.get('session_id')}\n"
    last = cache.with_suffix(".last")
    try:
        before = last.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        before = ""
    if before.startswith(session) and set(result.files[:HEAD_FILES]) <= set(
        before.splitlines()[1:]
    ):
        return ""
    atomic_write(last, (session + "\n".join(result.files)).encode(), fsync=False)
    return result.text


def index_in_background(root: Path) -> None:
    """Start `ctxmill map --index --root ROOT` detached from this process (its own session, no
    terminal, output discarded); it returns at once when another refresh holds the lock. Spawned
    with `os.posix_spawn` where there is one (`subprocess` costs a prompt's process ~4 ms of
    imports); this process never waits for it (once it ends, init reaps it)."""
    import os
    import sys

    args = [sys.executable, "-m", "ctxmill", "map", "--index", "--root", str(root)]
    if hasattr(os, "posix_spawn"):
        quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
        os.posix_spawn(sys.executable, args, os.environ, file_actions=quiet, setsid=True)
        return
    import subprocess

    subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, close_fds=True)
