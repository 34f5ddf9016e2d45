"""`build_map`: the repository map for one prompt (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repomap.index import RepoIndex
from repomap.rank import rank
from repomap.render import MIN_FILE_TOKENS, render

@dataclass(frozen=True)
class RepoMapConfig:
    enabled: bool = True
    """Whether each prompt of a hooked client gets a map."""
    budget: int = 512
    """Tokens the map may take in a prompt's context."""


HEADER = "Repository map (ctxmill: files and definitions ranked for this prompt; read a file for its code):"


@dataclass(frozen=True)
class RepoMap:
    text: str
    """The map with its header, or "" when no file fits or the repository has no source file."""
    files: tuple[str, ...]
    """The files it names, in rank order."""


def build_map(root: Path, prompt: str, recent: list[str], budget: int, index_file: Path | None,
              deadline: float | None = None) -> RepoMap:
    """The map of the repository at `root` for `prompt`; its index is kept in `index_file`
    (SQLite; None: in memory, for this call only). An index not brought up to date by
    `deadline` (`time.monotonic()`) gives no map: the next call goes on indexing."""
    index = RepoIndex(index_file)
    try:
        files = index.refresh(Path(root), deadline)
        if not files or budget <= 0:
            return RepoMap("", ())
        order = rank(index, files, prompt, recent, limit=budget // MIN_FILE_TOKENS + 1)
        body, named = render(order, index.outline, budget)
    finally:
        index.close()
    return RepoMap(f"{HEADER}\n{body}" if named else "", tuple(named))


def relative_paths(root: Path, paths: list[str]) -> list[str]:
    """`paths` (absolute or relative, as a session recorded them) that lie under `root`,
    repository-relative, in order."""
    root = Path(root).resolve()
    out: list[str] = []
    for p in paths:
        try:
            out.append(Path(p).resolve().relative_to(root).as_posix() if Path(p).is_absolute() else Path(p).as_posix())
        except ValueError:
            continue
    return out
