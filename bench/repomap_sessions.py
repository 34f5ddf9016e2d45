"""Recorded sessions' prompts, each with its repository as it was and the files the agent then used.

Used by bench/repomap_corpus.py. For a session whose project (`OWNER__REPO`) has a clone under
the mirrors folder (`<mirrors>/OWNER+REPO/repo`, a git directory with its history):
- each prompt a person typed is dated by the first model call after it (the recording's time);
- its commit is the repository's last commit (any branch) at or before that time; prompts
  before the first commit are left out;
- its targets are the files the agent read or edited after it and before the next prompt
  (`compress.vocab.calls.touched_files`: file tools, shell reads, patches) that existed at that
  commit; the session's absolute paths are mapped to the repository by the one folder prefix
  that makes the most of them name files of the repository's history;
- its recent files are those touched before it, most recent first.
`checkout(git_dir, commit, folder)` writes that commit's tree into a folder.
"""

from __future__ import annotations

import os
import subprocess
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from compress.formats.requests import from_provider
from compress.formats.sessions import read_session
from compress.vocab.calls import touched_files


@dataclass
class Prompt:
    text: str
    commit: str
    targets: set[str]
    recent: list[str]


def _git(git_dir: Path, *args: str) -> str:
    """The command's output (a snapshot missing some objects still lists what it has)."""
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), *args],
        capture_output=True,
        text=True,
        check=False,
        errors="surrogateescape",
    ).stdout


def _prompt_times(path: Path) -> dict[str, float]:
    """A prompt's first 200 characters -> when it was recorded, for recordings whose model calls
    carry no time (Codex rollouts: each line has a timestamp)."""
    from datetime import datetime

    import orjson

    out: dict[str, float] = {}
    for line in path.read_bytes().splitlines():
        try:
            record = orjson.loads(line)
            payload = record["payload"]
            if payload.get("type") != "message" or payload.get("role") != "user":
                continue
            text = "\n".join(c.get("text", "") for c in payload["content"] if isinstance(c, dict))
            at = datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00")).timestamp()
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        out.setdefault(text.strip()[:200], at)
    return out


def mirror_of(mirrors: Path, session: Path) -> Path | None:
    owner, repo = session.name.split("__")[:2]
    git_dir = mirrors / f"{owner}+{repo}" / "repo"
    return git_dir if git_dir.is_dir() else None


def _timeline(path: Path) -> list[tuple[str, str, float | None]]:
    """("prompt", text, time) and ("touch", absolute path, time) in order."""
    t = read_session(path)
    if not t.calls:
        return []
    body = t.request(len(t.calls) - 1)
    messages = from_provider(body).messages
    starts = [c.index for c in t.calls]
    times = [c.at for c in t.calls]
    recorded = _prompt_times(path) if t.format == "codex" else {}
    out: list[tuple[str, str, float | None]] = []
    for i, m in enumerate(messages):
        k = bisect_right(starts, i)
        at = times[k] if k < len(times) else None
        if m.role == "user" and not any(b.kind == "tool_result" for b in m.blocks):
            text = "\n".join(
                b.text for b in m.blocks if b.kind == "text" and not b.text.lstrip().startswith("<")
            )
            if text.strip() and not text.startswith(("Caveat:", "[Request interrupted")):
                out.append(
                    ("prompt", text, at if at is not None else recorded.get(text.strip()[:200]))
                )
        for b in m.blocks:
            if b.kind == "tool_use":
                for touch in touched_files(b.tool_name, b.input):
                    out.append(("touch", touch.path.replace("\\", "/"), at))
    return out


def _prefix(paths: list[str], known: set[str]) -> str:
    """The folder prefix whose removal makes the most `paths` name a file in `known`; on a tie the
    shortest (the longer relative paths match more of each path), then the first in order."""
    votes: Counter[str] = Counter()
    for p in set(paths):
        parts = p.split("/")
        for i in range(0 if not p.startswith("/") else 1, len(parts)):
            if "/".join(parts[i:]) in known:
                votes["/".join(parts[:i]) + "/" if i else ""] += 1
    return min(votes, key=lambda prefix: (-votes[prefix], len(prefix), prefix)) if votes else ""


def prompts(session: Path, git_dir: Path) -> list[Prompt]:
    timeline = _timeline(session)
    if not timeline:
        return []
    history = [
        line.split(" ", 1)
        for line in _git(git_dir, "log", "--all", "--format=%ct %H").split("\n")
        if line
    ]
    commits = sorted((int(t), h) for t, h in history)
    if not commits:
        return []
    known = set(_git(git_dir, "log", "--all", "--format=", "--name-only").split("\n")) - {""}
    prefix = _prefix([v for k, v, _ in timeline if k == "touch"], known)
    trees: dict[str, set[str]] = {}
    out: list[Prompt] = []
    recent: list[str] = []
    for i, (kind, value, at) in enumerate(timeline):
        if kind == "touch":
            if value.startswith(prefix):
                rel = value[len(prefix) :]
                recent = [rel] + [r for r in recent if r != rel]
            continue
        if at is None:
            continue
        k = bisect_right([c[0] for c in commits], at) - 1
        if k < 0:
            continue
        commit = commits[k][1]
        if commit not in trees:
            trees[commit] = set(
                _git(git_dir, "ls-tree", "-r", "--name-only", commit).split("\n")
            ) - {""}
        later = []
        for k2, v2, _ in timeline[i + 1 :]:
            if k2 == "prompt":
                break
            if v2.startswith(prefix):
                later.append(v2[len(prefix) :])
        targets = {p for p in later if p in trees[commit]}
        if targets:
            out.append(Prompt(value, commit, targets, list(recent)))
    return out


def checkout(git_dir: Path, commit: str, folder: Path) -> None:
    """The tree of `commit` written into `folder` (a git repository of one commit, so the map
    lists its files as `git ls-files` does). Blobs the snapshot lacks (it keeps no file of 4 MiB
    or more) are left out; links are written as links."""
    folder.mkdir(parents=True, exist_ok=True)
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", commit],
        capture_output=True,
        check=True,
    ).stdout
    entries = []
    for item in listing.split(b"\0"):
        if item:
            meta, name = item.split(b"\t", 1)
            mode, kind, sha = meta.split()
            if kind == b"blob":
                entries.append((mode, sha, name.decode("utf-8", "surrogateescape")))
    batch = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        input=b"".join(sha + b"\n" for _, sha, _ in entries),
        capture_output=True,
        check=True,
    ).stdout
    at = 0
    for mode, _, name in entries:
        header_end = batch.index(b"\n", at)
        header = batch[at:header_end].split()
        at = header_end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        data = batch[at : at + size]
        at += size + 1
        target = folder / name
        if ".." in Path(name).parts or name.startswith("/"):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == b"120000":
            os.symlink(data.decode("utf-8", "surrogateescape"), target)
        else:
            target.write_bytes(data)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    subprocess.run(["git", "init", "-q", str(folder)], check=True, env=env)
    subprocess.run(
        ["git", "-C", str(folder), "add", "-A", "-f"], check=True, env=env, capture_output=True
    )
