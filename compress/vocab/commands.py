"""What a shell command runs, for telling a fix from a look, and a read from a run.

`command_words` (each simple command from its program on, `bash -c SCRIPT` read as commands),
`looks_only` (it only looks or checks: ls, cat, grep, git status, a test or type-check run,
`x --version` …), `commits` (it runs `git commit`), `main_command` (the program and subcommand it is run for), `same_command` (two
commands run the same thing), `shows_files` (its output is the text of the files it reads). Built on the
shallow parsing of `compress.vocab.shell`.
"""

from __future__ import annotations

import posixpath
from functools import lru_cache

import regex

from compress.vocab.shell import WRAPPERS, pipelines, script_of, shell_touches, simple_commands
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
}
"""Subcommands that only look."""
_CHECK_SUBCOMMANDS = {
    "mix": {"test", "dialyzer", "credo", "compile"}, "cargo": {"check", "test", "clippy", "build"},
    "go": {"test", "vet", "build"}, "npm": {"test"}, "pnpm": {"test", "typecheck", "lint"},
    "yarn": {"test", "typecheck", "lint"}, "bun": {"test", "typecheck"}, "npx": {"vitest", "jest", "tsc", "eslint"},
}
"""Subcommands that check: they tell whether something is wrong, they do not fix it (but they
run the project)."""
_CHECKS = frozenset({"pytest", "tsc", "mypy", "pyright", "rspec", "jest", "vitest", "eslint", "ruff", "flake8", "pylint",
                     "shellcheck", "rubocop"})
"""Checkers, which only look unless told to fix (`--fix`, `-A`, `--write`)."""
_FIXING = frozenset({"--fix", "-A", "-a", "--write", "--autocorrect"})
_SHELLS = frozenset({"bash", "sh", "zsh"})


def _program_words(words: list[str]) -> list[str]:
    """One simple command's words from its program on (wrappers and VAR=value left out, the
    program by its base name lower-cased); [] for `cd` and for nothing left."""
    while words and (words[0] in WRAPPERS or "=" in words[0] and not words[0].startswith(("=", "-"))):
        words = words[1:]
    if not words or words[0] == "cd":
        return []
    return [posixpath.basename(words[0].replace("\\", "/")).lower()] + words[1:]


def command_words(command: str, _depth: int = 0) -> list[list[str]]:
    """Each simple command's words from its program on: wrappers, VAR=value and `cd` left out,
    the program by its base name lower-cased, the script of `bash -c SCRIPT` read as commands."""
    out: list[list[str]] = []
    for words in map(_program_words, simple_commands(command)):
        if not words:
            continue
        if words[0] in _SHELLS and "-c" in words[1:-1] and _depth < 2:
            out += command_words(words[words.index("-c") + 1], _depth + 1)
            continue
        out.append(words)
    return out


def _sees(words: list[str]) -> bool:
    """It only looks and runs nothing of the project (ls, echo, test, git status, `x --version`)."""
    name, args = words[0], words[1:]
    if name in _LOOK_COMMANDS:
        return True
    if "--version" in args or "--help" in args or args[:1] in (["-v"], ["-V"], ["version"]):
        return True
    return name in _LOOK_SUBCOMMANDS and bool(args[:1]) and args[0] in _LOOK_SUBCOMMANDS[name]


def _looks(words: list[str]) -> bool:
    name, args = words[0], words[1:]
    if _sees(words) or name in _CHECK_SUBCOMMANDS and args[:1] and args[0] in _CHECK_SUBCOMMANDS[name]:
        return True
    if name.startswith("python") and args[:1] == ["-m"] and args[1:2] and args[1] in _CHECKS:
        return not _FIXING.intersection(args)
    if name in _CHECKS:
        return not _FIXING.intersection(args)
    return name == "curl" and not {"-X", "-d", "--data", "-T", "-o", "-O", "--request"}.intersection(args)


_PRINTERS = frozenset({"cat", "head", "tail", "nl", "less", "more", "bat", "batcat", "get-content", "gc"})
"""Programs that print the files they name as they are (or a window of them: `head -50`)."""
_WINDOWS = _PRINTERS - {"get-content", "gc"} | {"select-object"}
"""Programs that, piped after a printer, pass on a window of its lines or number them."""
_SED_PRINT = regex.compile(r"\s*(?:(?:\d+|\$|/[^/]*/)(?:\s*,\s*(?:\d+|\$|\+\d+|/[^/]*/))?\s*p\s*(?:;|$))+\s*")
"""A `sed -n` script that only prints lines by number or pattern range (`1,80p`, `10,20p;40,50p`,
`/start/,/end/p`)."""
_SED_QUIT = regex.compile(r"\s*\d+q\s*")
"""A sed script that prints the first lines (`50q`)."""
_AWK_WINDOW = regex.compile(r"\s*(?:NR\s*(?:==|>=|<=|>|<)\s*\d+\s*(?:&&|\|\|)?\s*)+(?:\{\s*print(?:\s+\$0)?\s*;?\s*\})?\s*")
"""An awk program that only prints lines by number (`NR>=10 && NR<=20`, `NR==5 {print}`)."""


def _window(words: list[str], printer: bool) -> bool:
    """`words` show a window of lines as they are: a file's when it is a pipeline's `printer`
    (its first part), else its input's."""
    name, args = words[0], words[1:]
    script = next((a for a in args if not a.startswith("-")), None)
    if name == "sed":
        quiet = any(a.startswith("-") and not a.startswith("--") and "n" in a for a in args) or "--quiet" in args
        return script is not None and not any(a.startswith("-i") or a == "--in-place" for a in args) and (
            quiet and _SED_PRINT.fullmatch(script) is not None or _SED_QUIT.fullmatch(script) is not None)
    if name == "awk":
        return script is not None and _AWK_WINDOW.fullmatch(script) is not None
    if name == "tail" and any(a in ("-f", "-F", "--follow") for a in args):
        return False  # follows a growing file: a running task's output, not a file's text
    return name in (_PRINTERS if printer else _WINDOWS)


@lru_cache(maxsize=2048)
def shows_files(command: str) -> bool:
    """The command's output is the text of the files it reads, whole or a window of lines
    (`head -50 package.json`, `nl -ba f | sed -n 1,80p`, `cat a; echo ---; cat b`, PowerShell's
    `$i=1; Get-Content f | ForEach-Object { … }`), beside what parts that only look print
    (`ls scripts/ && head -50 package.json`, `test -f f && sed -n 1,220p f || true`): every file
    it touches it reads, some pipeline starts with a printer of files and passes only windows or
    numbering of their lines on, and every other pipeline only looks (`_sees`). A command that
    runs anything else (a build, a test, a script, `grep` of the printed lines) shows its own
    output. Cached: `tool_kind` asks again for every run over the same history."""
    touches = shell_touches(command)
    if not touches or any(t.action != READ for t in touches):
        return False
    printed = False
    for pipeline in pipelines(script_of(command)):
        stages = [w for w in map(_program_words, pipeline) if w and not w[0].startswith("$")]  # PowerShell
        # variable steps (`$i = 1`) print nothing
        if not stages:
            continue
        if not _window(stages[0], printer=True):
            if not all(_sees(w) for w in stages):
                return False
            continue
        for words in stages[1:]:
            if words[0] in ("foreach-object", "%"):
                return True  # the rest is its script block: it formats each line (no file touched but the reads)
            if not _window(words, printer=False):
                return False
        printed = True
    return printed


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
