"""What a file is, by its name: source code the agent may edit, or prose.

One place for the extension lists the stages use: a read of source code or of configuration is
the agent's working material (it copies the lines it replaces out of it, often long after the
read), a read of anything else (docs, data, logs, lock files) rarely is, and a read of data, a
log or a host's saved tool output (`is_data`) practically never.
"""

from __future__ import annotations

import posixpath
import re

PROSE_EXTENSIONS = frozenset({".md", ".mdx", ".markdown", ".rst", ".txt"})

SOURCE_EXTENSIONS = frozenset({
    ".py", ".pyi", ".ipynb", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".vue", ".svelte",
    ".astro", ".ex", ".exs", ".heex", ".eex", ".leex", ".erl", ".hrl", ".rs", ".go", ".java", ".kt", ".kts",
    ".scala", ".groovy", ".rb", ".erb", ".php", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".m", ".mm",
    ".cs", ".fs", ".swift", ".dart", ".lua", ".pl", ".pm", ".r", ".jl", ".hs", ".ml", ".mli", ".clj", ".cljs",
    ".elm", ".zig", ".nim", ".sol", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".sql", ".html", ".htm", ".css",
    ".scss", ".sass", ".less", ".graphql", ".proto", ".tf", ".nix", ".cmake", ".gradle", ".gd", ".prisma",
    ".glsl", ".hlsl", ".wgsl", ".cu",
    # configuration, edited like code: 15 of the corpus's 44 reads of TOML and YAML files supplied
    # lines to later edits, in 8 of 18 projects (source reads: about half; JSON reads: a sixth)
    ".toml", ".yml", ".yaml", ".ini", ".cfg", ".conf", ".properties",
})


DATA_EXTENSIONS = frozenset({".jsonl", ".ndjson", ".log", ".output", ".csv", ".tsv", ".har"})
"""Records and logs (JSON lines, logs, tables, HTTP archives, Claude Code's background-task
`.output` files): read to be looked at, not edited by hand. Reads of them supplied none of the
lines the corpus's agents copied into edits."""


def extension(path: str) -> str:
    return posixpath.splitext(path.lower())[1]


def is_prose(path: str) -> bool:
    return extension(path) in PROSE_EXTENSIONS


HOST_SAVED_OUTPUT = re.compile(r"/\.claude/projects/.+/tool-results/|(^|/)claude-tool-results/|/opencode/tool-output/")
"""Where a host saves a tool's output too long to show and tells the agent to read it from:
Claude Code under its session's `tool-results/` (or `/tmp/claude-tool-results/`), OpenCode
under its data folder's `tool-output/`. Reading such a file is reading that output."""


def is_data(path: str) -> bool:
    """Records, logs, and the tool output a host saved to a file (`HOST_SAVED_OUTPUT`)."""
    return extension(path) in DATA_EXTENSIONS or bool(HOST_SAVED_OUTPUT.search(path.replace("\\", "/")))


def is_source(path: str) -> bool:
    """Source code or configuration by extension, or a build file named without one (Makefile,
    Dockerfile)."""
    name = posixpath.basename(path.lower())
    return extension(path) in SOURCE_EXTENSIONS or name in ("makefile", "dockerfile", "rakefile", "gemfile")
