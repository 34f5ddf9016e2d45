"""What a file is, by its name: source code the agent may edit, or prose.

One place for the extension lists the stages use: a read of source code is the agent's working
material (it copies the lines it replaces out of it, often long after the read), a read of
anything else (docs, data, logs, lock files) rarely is, and a read of data or a log
(`is_data`) practically never.
"""

from __future__ import annotations

import posixpath

PROSE_EXTENSIONS = frozenset({".md", ".mdx", ".markdown", ".rst", ".txt"})

SOURCE_EXTENSIONS = frozenset({
    ".py", ".pyi", ".ipynb", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".vue", ".svelte",
    ".astro", ".ex", ".exs", ".heex", ".eex", ".leex", ".erl", ".hrl", ".rs", ".go", ".java", ".kt", ".kts",
    ".scala", ".groovy", ".rb", ".erb", ".php", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".m", ".mm",
    ".cs", ".fs", ".swift", ".dart", ".lua", ".pl", ".pm", ".r", ".jl", ".hs", ".ml", ".mli", ".clj", ".cljs",
    ".elm", ".zig", ".nim", ".sol", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".sql", ".html", ".htm", ".css",
    ".scss", ".sass", ".less", ".graphql", ".proto", ".tf", ".nix", ".cmake", ".gradle",
})


DATA_EXTENSIONS = frozenset({".jsonl", ".ndjson", ".log", ".output", ".csv", ".tsv", ".har"})
"""Records and logs (JSON lines, logs, tables, HTTP archives, Claude Code's background-task
`.output` files): read to be looked at, not edited by hand. Reads of them supplied none of the
lines the corpus's agents copied into edits."""


def extension(path: str) -> str:
    return posixpath.splitext(path.lower())[1]


def is_prose(path: str) -> bool:
    return extension(path) in PROSE_EXTENSIONS


def is_data(path: str) -> bool:
    return extension(path) in DATA_EXTENSIONS


def is_source(path: str) -> bool:
    """Source code by extension, or a build file named without one (Makefile, Dockerfile)."""
    name = posixpath.basename(path.lower())
    return extension(path) in SOURCE_EXTENSIONS or name in ("makefile", "dockerfile", "rakefile", "gemfile")
