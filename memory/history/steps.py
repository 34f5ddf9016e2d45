"""A tool call as a normalised step, the unit `memory.distill` mines: the same routine gives the
same steps in every session, whatever the paths, files and arguments of the day.

Must hold: deterministic; a shell command is each of its simple commands (`compress.vocab.shell.
command_words`: wrappers, `VAR=value` and `cd` left out) as its program and, for programs that
have sub-commands, the sub-command (`git commit -m "x"` -> `git commit`, `npm run build` ->
`npm run build`, `python -m pytest tests/x.py` -> `python -m pytest`, `./gradlew test` ->
`gradlew test`); programs that only decorate or page output (`head`, `grep` in a pipeline, `echo`)
are dropped; a call that changes a file (edit, write, patch tools or `apply_patch`) is `(edit)`;
other tools (reads, searches, web) give no step.
"""

from __future__ import annotations

import re
from typing import Any

EDIT_STEP = "(edit)"
_SUBCOMMANDS = frozenset({
    "git", "npm", "yarn", "pnpm", "bun", "npx", "bunx", "cargo", "go", "docker", "docker-compose", "kubectl", "make",
    "uv", "poetry", "pip", "pip3", "gh", "dotnet", "mvn", "gradle", "gradlew", "mvnw", "rails", "bundle", "mix",
    "alembic", "terraform", "helm", "brew", "conda", "deno", "just", "tox", "nox", "hatch", "pdm", "rake", "composer",
    "php", "flutter", "dart", "swift", "rustup", "nx", "turbo", "lerna", "prisma", "django-admin", "manage.py",
    "supabase", "firebase", "vercel", "wrangler", "heroku", "aws", "gcloud", "az", "pre-commit", "ruff", "hugo",
    "zig", "stack", "cabal", "opam", "dune", "sbt", "lein", "elixir", "expo", "ng", "vite", "jest", "vitest",
})
"""Programs whose first plain argument names what they do (a sub-command, a script, a target)."""
_RUNNERS = frozenset({"run", "exec", "x", "dlx"})
"""Sub-commands that name a script or tool next (`npm run build`, `pnpm exec tsc`, `uv run pytest`)."""
_NOISE = frozenset({
    "head", "tail", "grep", "egrep", "rg", "sort", "uniq", "wc", "tee", "cut", "jq", "awk", "xargs", "tr", "column",
    "less", "more", "echo", "printf", "true", "false", "sleep", "pwd", "which", "clear", "cat", "ls", "sed", "set",
    "export", "source", ".", "exit", "date", "nl", "read", "test", "[", "[[", "time", "timeout", "if", "then", "else",
    "elif", "fi", "for", "do", "done", "while", "until", "case", "esac", "function", "{", "}", "!", "local", "return",
})
"""Programs that decorate, page or only print, and shell keywords: no part of a routine on their own."""
_PLAIN = re.compile(r"^[a-z][a-z0-9_:-]{0,30}$")
_PYTHON = re.compile(r"^python[0-9.]*$")


def command_steps(command: str) -> list[str]:
    """The steps of one shell command line (empty when it is unreadable or only noise)."""
    from compress.vocab.shell import command_words
    from compress.vocab.tools import PATCH_TOOLS

    out = []
    for words in command_words(command):
        program = words[0].removeprefix("./")
        if program in PATCH_TOOLS:
            out.append(EDIT_STEP)
            continue
        if program in _NOISE or not program or len(program) > 40:
            continue
        args = [w for w in words[1:] if not w.startswith("-")]
        if _PYTHON.match(program):
            program = "python"
            if words[1:2] == ["-m"] and len(words) > 2:
                out.append(f"python -m {words[2]}")
                continue
            if args and args[0].endswith("manage.py") and len(args) > 1 and _PLAIN.match(args[1]):
                out.append(f"python manage.py {args[1]}")
                continue
        if program in _SUBCOMMANDS and args and _PLAIN.match(args[0]):
            step = f"{program} {args[0]}"
            if args[0] in _RUNNERS and len(args) > 1 and _PLAIN.match(args[1]):
                step += f" {args[1]}"
            out.append(step)
        else:
            out.append(program)
    return out


def call_steps(name: str, tool_input: Any) -> list[str]:
    """The steps of one tool call (a shell call: its commands; a file change: `(edit)`)."""
    from compress.vocab.tools import PATCH_TOOLS, ToolKind, base_name, command_of, file_tool_action, tool_kind
    from compress.vocab.touches import CHANGES

    base = base_name(name)
    if tool_kind(name) is ToolKind.COMMAND:
        return command_steps(command_of(tool_input))
    if base in PATCH_TOOLS:
        return [EDIT_STEP]
    if isinstance(tool_input, dict) and file_tool_action(base, tool_input) in CHANGES:
        return [EDIT_STEP]
    return []
