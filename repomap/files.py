"""Which files of a repository the map may name, and how their content is read.

`list_files(root)` is `git ls-files` of tracked and untracked, not ignored files when `root` is
in a git work tree, else a walk that skips dependency, build and hidden folders. Must hold:
- what a person does not work on is never named: vendored and dependency folders, lock files,
  minified or bundled assets (`*.min.js`, `*.bundle.js`, source maps), generated code (`*_pb2.py`,
  `*.pb.go`, `*.g.dart`, `*.generated.*`), binaries (images, fonts, archives, media);
- a name that could carry text other than a path into a prompt is never named: a control or
  format character (a newline, an ANSI escape, a bidi override), or a name too long or too wordy
  to be a file's (`SAFE_NAME`: a cloned repository chooses its file names);
- content is read only with `ground.files.read_inside`: a regular file, inside the repository
  once links are resolved (a link to `~/.ssh/id_rsa` or `/dev/zero` is refused), at most
  `MAX_FILE_BYTES`; `minified(data)` tells a bundle by its line lengths.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import Path

MAX_FILE_BYTES = 512 * 1024
MAX_FILES = 20_000
MAX_NAME_CHARS = 240
MAX_PART_CHARS = 100
MAX_PART_SPACES = 4
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".ctxmill",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        "dist",
        "build",
        "target",
        ".tox",
        ".mypy_cache",
        ".next",
        "vendor",
        "third_party",
        "third-party",
        "bower_components",
        "Pods",
        ".gradle",
        ".idea",
        ".vscode",
        "coverage",
        ".pytest_cache",
        ".nuxt",
        ".svelte-kit",
        ".turbo",
        "site-packages",
        "DerivedData",
    }
)
SKIP_SUFFIXES = (
    ".min.js",
    ".min.css",
    ".min.mjs",
    ".bundle.js",
    ".umd.js",
    ".map",
    "_pb2.py",
    "_pb2_grpc.py",
    ".pb.go",
    ".g.dart",
    ".freezed.dart",
    ".pyc",
    ".class",
    ".o",
    ".so",
    ".dll",
    ".dylib",
    ".exe",
    ".a",
    ".lib",
    ".wasm",
    ".jar",
    ".whl",
    ".egg",
    ".lock",
)
SKIP_NAMES = frozenset(
    {
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "Cargo.lock",
        "poetry.lock",
        "Gemfile.lock",
        "composer.lock",
        "go.sum",
        "uv.lock",
        "Pipfile.lock",
        "bun.lockb",
        ".DS_Store",
        "Thumbs.db",
    }
)
BINARY_EXTENSIONS = frozenset(
    """png jpg jpeg gif bmp ico icns webp avif tiff psd svgz heic
woff woff2 ttf otf eot zip gz tgz bz2 xz 7z rar tar zst mp3 mp4 m4a wav ogg flac webm mov avi mkv
pdf doc docx xls xlsx ppt pptx sqlite sqlite3 db bin dat pkl npy npz onnx pt pth h5 parquet
keystore jks p12 pem der crt key""".split()
)
_UNSAFE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn"})
MINIFIED_LINE_CHARS = 1000
"""A file whose lines average more than this (or whose first line is 5 times longer) is a
bundle or generated data, not something a person edits."""


def list_files(root: Path) -> list[str]:
    """Repository-relative paths of the files the map may name, sorted, at most MAX_FILES."""
    import subprocess  # only to index: a prompt that reads the index never runs git

    try:
        out = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "-co", "--exclude-standard"],
            capture_output=True,
            timeout=20,
            check=True,
        ).stdout
        names = [n for n in out.decode("utf-8", "surrogateescape").split("\0") if n]
    except (OSError, subprocess.SubprocessError):
        names = _walk(root)
    return sorted(n for n in set(names) if wanted(n))[:MAX_FILES]


def _walk(root: Path) -> list[str]:
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        rel = os.path.relpath(folder, root)
        found.extend(f if rel == "." else f"{rel}/{f}" for f in files)
        if len(found) > MAX_FILES * 4:
            break
    return found


def wanted(name: str) -> bool:
    """Whether the map may name the repository-relative path `name` (the module's rules)."""
    parts = name.split("/")
    base = parts[-1]
    if SKIP_DIRS.intersection(parts[:-1]) or base in SKIP_NAMES or base.endswith(SKIP_SUFFIXES):
        return False
    dot = base.rfind(".")
    if dot > 0 and base[dot + 1 :].lower() in BINARY_EXTENSIONS:
        return False
    return safe_name(name)


def safe_name(name: str) -> bool:
    """A name made only of what a file name needs: no control, format or line-separator
    character (and no undecodable byte), short, and no part that reads like a sentence."""
    if len(name) > MAX_NAME_CHARS:
        return False
    if not (name.isascii() and name.isprintable()) and any(
        unicodedata.category(c) in _UNSAFE for c in name
    ):
        return False
    return all(
        len(part) <= MAX_PART_CHARS and part.count(" ") <= MAX_PART_SPACES
        for part in name.split("/")
    )


def read(root: Path, name: str) -> bytes | None:
    """The content of the file `name` under `root` (see the module docstring), or None."""
    from ground.files import read_inside

    try:
        return read_inside(os.path.join(root, name), root, MAX_FILE_BYTES)
    except (OSError, ValueError):
        return None


def minified(data: bytes) -> bool:
    """Whether `data` looks like a bundle or generated data rather than written code."""
    lines = data.count(b"\n") + 1
    if len(data) / lines > MINIFIED_LINE_CHARS:
        return True
    first = data.find(b"\n")
    return len(data) > 20_000 and first > 5 * MINIFIED_LINE_CHARS


def safe_stat(root: Path, name: str) -> os.stat_result | None:
    """The file's status when it is a regular file inside `root` (a link is followed only when
    it stays inside), else None."""
    full = os.path.join(root, name)
    try:
        st = os.lstat(full)
        if stat.S_ISLNK(st.st_mode):
            real, real_root = os.path.realpath(full), os.path.realpath(root)
            if os.path.commonpath([real, real_root]) != real_root:
                return None
            st = os.stat(full)
    except (OSError, ValueError):
        return None
    return st if stat.S_ISREG(st.st_mode) and st.st_size <= MAX_FILE_BYTES else None
