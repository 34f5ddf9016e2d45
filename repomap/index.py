"""The outlines of a repository's files, cached per file.

`load_outlines(root, cache_file)` lists the repository's source files (`git ls-files` of
tracked and untracked, not ignored files when `root` is in a git work tree; else a walk that
skips dependency and build folders), and returns each file's outline. A file whose size and
mtime match the cache is not read; one that changed is read and hashed, and parsed only when
its content hash is new. The cache is rewritten atomically only when something changed, so
concurrent prompts at worst parse a file twice. Unreadable files and files over
`MAX_FILE_BYTES` are left out.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
import xxhash

from ground.files import atomic_write
from repomap.languages import supported
from repomap.outline import Definition, Outline, outline

CACHE_VERSION = 1
MAX_FILE_BYTES = 512 * 1024
MAX_FILES = 20_000
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".ctxmill", "node_modules", ".venv", "venv", "__pycache__",
                       "dist", "build", "target", ".tox", ".mypy_cache", ".next", "vendor"})


def list_files(root: Path) -> list[str]:
    """Repository-relative paths of the source files under `root`, sorted, at most MAX_FILES."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "-co", "--exclude-standard"],
                             capture_output=True, timeout=20, check=True).stdout
        names = [n for n in out.decode("utf-8", "surrogateescape").split("\0") if n]
    except (OSError, subprocess.SubprocessError):
        names = _walk(root)
    return sorted(n for n in names if supported(n) and not SKIP_DIRS.intersection(n.split("/")[:-1]))[:MAX_FILES]


def _walk(root: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        rel = os.path.relpath(folder, root)
        found.extend(f if rel == "." else f"{rel}/{f}" for f in files)
        if len(found) > MAX_FILES * 4:
            break
    return found


def _encode(o: Outline) -> list:
    return [[[d.kind, d.name, d.signature, d.line, d.depth] for d in o.defs], " ".join(o.refs)]


def _decode(raw: list) -> Outline:
    defs, refs = raw
    return Outline(tuple(Definition(*d) for d in defs), tuple(refs.split()) if refs else ())


def load_outlines(root: Path, cache_file: Path | None) -> dict[str, Outline]:
    """path -> outline for every source file of the repository at `root`."""
    root = Path(root)
    cached: dict[str, list] = {}
    if cache_file is not None:
        try:
            data = orjson.loads(cache_file.read_bytes())
            if data.get("v") == CACHE_VERSION and data.get("root") == str(root):
                cached = data["files"]
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            cached = {}
    by_hash = {entry[2]: entry[3] for entry in cached.values()}
    fresh: dict[str, list] = {}
    outlines: dict[str, Outline] = {}
    changed = False
    for name in list_files(root):
        try:
            st = os.stat(root / name)
        except OSError:
            continue
        if st.st_size > MAX_FILE_BYTES:
            continue
        entry = cached.get(name)
        if entry is None or entry[0] != st.st_size or entry[1] != st.st_mtime_ns:
            try:
                content = (root / name).read_bytes()
            except OSError:
                continue
            digest = xxhash.xxh3_64_hexdigest(content)
            raw = by_hash.get(digest)
            if raw is None:
                raw = _encode(outline(name, content))
            entry = [st.st_size, st.st_mtime_ns, digest, raw]
            changed = True
        fresh[name] = entry
        outlines[name] = _decode(entry[3])
    if cache_file is not None and (changed or len(fresh) != len(cached)):
        atomic_write(cache_file, orjson.dumps({"v": CACHE_VERSION, "root": str(root), "files": fresh}), fsync=False)
    return outlines
