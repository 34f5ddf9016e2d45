"""What a shell command runs, for telling a fix from a look, and a read from a run.

`command_words` (each simple command from its program on, `bash -c SCRIPT` read as commands),
`looks_only` (it only looks or checks: ls, cat, grep, git status, a test or type-check run,
`x --version` …), `commits` (it runs `git commit`), `main_command` (the program and subcommand it is run for), `same_command` (two
commands run the same thing), `reads_one_file` (it only shows one file's lines). Built on the
shallow parsing of `compress.vocab.shell`.
"""

from __future__ import annotations

import posixpath
from functools import lru_cache

from compress.vocab.shell import WRAPPERS, script_of, shell_touches, simple_commands
from compress.vocab.touches import READ

_LOOK_COMMANDS = frozenset({
    "ls", "cat", "head", "tail", "grep", "rg", "ag", "find", "fd", "wc", "echo", "printf", "pwd", "which", "type",
    "file", "stat", "du", "df", "ps", "env", "printenv", "date", "whoami", "id", "uname", "tree", "less", "more",
    "sort", "uniq", "cut", "jq", "diff", "true", "test", "[", "sleep", "basename", "dirname", "realpath", "readlink",
    "nl", "bat", "column", "awk", "history",
    # PowerShell
    "get-childitem", "get-content", "test-path", "get-command", "select-object", "select-string", "format-table",
    "format-list", "write-output", "write-host", "get-process", "test-netconnection", "start-sleep", "out-string",
    "measure-object", "where-object", "foreach-object", "sort-object", "get-item", "resolve-path", "join-path",
})
"""Programs that only look."""
_LOOK_SUBCOMMANDS = {
    "git": {"status", "log", "diff", "show", "branch", "remote", "ls-files", "check-ignore", "rev-parse", "ls-remote",
            "blame", "describe", "config"},
    "bd": {"show", "ready", "list"}, "gh": {"auth"}, "launchctl": {"list"},
    # checks: they tell whether something is wrong, they do not fix it
    "mix": {"test", "dialyzer", "credo", "compile"}, "cargo": {"check", "test", "clippy", "build"},
    "go": {"test", "vet", "build"}, "npm": {"test"}, "pnpm": {"test", "typecheck", "lint"},
    "yarn": {"test", "typecheck", "lint"}, "bun": {"test", "typecheck"}, "npx": {"vitest", "jest", "tsc", "eslint"},
}
"""Subcommands that only look or check."""
_CHECKS = frozenset({"pytest", "tsc", "mypy", "pyright", "rspec", "jest", "vitest", "eslint", "ruff", "flake8", "pylint",
                     "shellcheck", "rubocop"})
"""Checkers, which only look unless told to fix (`--fix`, `-A`, `--write`)."""
_FIXING = frozenset({"--fix", "-A", "-a", "--write", "--autocorrect"})
_SHELLS = frozenset({"bash", "sh", "zsh"})


def command_words(command: str, _depth: int = 0) -> list[list[str]]:
    """Each simple command's words from its program on: wrappers, VAR=value and `cd` left out,
    the program by its base name lower-cased, the script of `bash -c SCRIPT` read as commands."""
    out: list[list[str]] = []
    for words in simple_commands(command):
        while words and (words[0] in WRAPPERS or "=" in words[0] and not words[0].startswith(("=", "-"))):
            words = words[1:]
        if not words or words[0] == "cd":
            continue
        name = posixpath.basename(words[0].replace("\\", "/")).lower()
        if name in _SHELLS and "-c" in words[1:-1] and _depth < 2:
            out += command_words(words[words.index("-c") + 1], _depth + 1)
            continue
        out.append([name] + words[1:])
    return out


def _looks(words: list[str]) -> bool:
    name, args = words[0], words[1:]
    if name in _LOOK_COMMANDS:
        return not (name == "sed" and "-i" in args)
    if "--version" in args or "--help" in args or args[:1] in (["-v"], ["-V"], ["version"]):
        return True
    if name in _LOOK_SUBCOMMANDS and args[:1] and args[0] in _LOOK_SUBCOMMANDS[name]:
        return True
    if name.startswith("python") and args[:1] == ["-m"] and args[1:2] and args[1] in _CHECKS:
        return not _FIXING.intersection(args)
    if name in _CHECKS:
        return not _FIXING.intersection(args)
    return name == "curl" and not {"-X", "-d", "--data", "-T", "-o", "-O", "--request"}.intersection(args)


_READ_PROGRAMS = frozenset({"cat", "head", "tail", "nl", "sed", "less", "bat", "get-content", "gc", "select-object",
                            "foreach-object", "%", "}"})
"""Programs of a command that shows one file's lines: reads, and windows or numbering of them."""


@lru_cache(maxsize=2048)
def reads_one_file(command: str) -> bool:
    """The command only shows lines of one file (`nl -ba f | sed -n 1,80p`, PowerShell's
    `$i=1; Get-Content f | ForEach-Object { … }`): it reads exactly one file, writes none, and
    each of its parts is a reader, a line window or numbering, or a PowerShell variable step.
    Cached: `tool_kind` asks again for every run over the same history."""
    touches = shell_touches(command)
    if not touches or any(t.action != READ for t in touches) or len({t.path for t in touches}) != 1:
        return False
    parts = simple_commands(script_of(command))
    for words in parts:
        if not _shows_lines(words):
            return False
        if words[0].lower() in ("foreach-object", "%"):
            return True  # the rest is its script block: it formats each line (no file touched but the read)
    return bool(parts)


def _shows_lines(words: list[str]) -> bool:
    args = [w for w in words if not ("=" in w and not w.startswith(("=", "-")) and w is words[0])]
    if not args or args[0].startswith("$"):
        return True
    name = posixpath.basename(args[0]).lower()
    return name in _READ_PROGRAMS and not (name == "sed" and any(a.startswith("-i") for a in args))


_GIT_VALUED_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
"""git's global options that take the next word as their value (`git -C repo commit`)."""


@lru_cache(maxsize=2048)
def commits(command: str) -> bool:
    """Some part of the command is a `git commit` (after git's global options). Cached:
    trim_outputs asks again for every command of the history at every epoch."""
    for words in command_words(command):
        if words[0] != "git":
            continue
        args = iter(words[1:])
        for arg in args:
            if arg in _GIT_VALUED_OPTIONS:
                next(args, None)
            elif not arg.startswith("-"):
                if arg == "commit":
                    return True
                break
    return False


def looks_only(command: str) -> bool:
    """Every part of the command only looks or checks (ls, cat, grep, git status, a test run …)."""
    parts = command_words(command)
    return bool(parts) and all(_looks(words) for words in parts)


def _pair(words: list[str]) -> tuple[str, str]:
    return words[0], next((a for a in words[1:] if not a.startswith("-")), "")


_FILTERS = frozenset({"head", "tail", "grep", "rg", "sort", "uniq", "cut", "jq", "wc", "tee", "awk", "sed", "column",
                      "less", "more", "tr", "xargs", "echo", "printf", "true", "select-string", "select-object",
                      "format-table", "format-list", "out-string", "where-object", "measure-object"})
"""Programs that filter or decorate another's output in a pipeline."""


def main_command(command: str) -> tuple[str, str] | None:
    """(program, subcommand or script) a command is run for: its last part that does more than
    look, else its first part that is not a filter (`x --version | head`), else its first part."""
    parts = command_words(command)
    acting = [words for words in parts if not _looks(words)]
    if acting:
        return _pair(acting[-1])
    runs = [words for words in parts if words[0] not in _FILTERS] or parts
    return _pair(runs[0]) if runs else None


def same_command(command: str, wanted: tuple[str, str]) -> bool:
    """`command` runs `wanted` (program and subcommand, a script compared by its base name)."""
    for words in command_words(command):
        name, sub = _pair(words)
        if name == wanted[0] and (sub == wanted[1] or posixpath.basename(sub) == posixpath.basename(wanted[1])):
            return True
    return False
