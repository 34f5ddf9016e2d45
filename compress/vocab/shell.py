"""Which files a shell command touches: `shell_touches(command, cwd)`, and its heredocs.

Reads Bash `command` and Codex `cmd` strings: heredocs (`cat > f <<'EOF'`), redirections (`>`,
`>>`, `<`, `tee`), `cat/head/tail/sed -n` reads, `mv`, `cp`, `rm`, `touch`, `sed -i`,
`git mv/rm`, apply_patch bodies and `cd DIR &&` prefixes (which set the working directory
later relative paths join). Parsing is deliberately shallow (no variables, globs, subshell
tracking); anything it cannot read gives no touch rather than a wrong one. Linear in the command.

What a command runs, for telling a fix from a look: `command_words` (each simple command from
its program on, `bash -c SCRIPT` read as commands), `looks_only` (it only looks or checks: ls,
cat, grep, git status, a test or type-check run, `x --version` …), `main_command` (the program and
subcommand it is run for), `same_command` (two commands run the same thing).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache

from compress.vocab.touches import (CREATE, DELETE, EDIT, MOVE, READ, WRITE, FileTouch, is_patch, normalize_path,
                                    patch_touches)


@dataclass(frozen=True, slots=True)
class Heredoc:
    """One heredoc of a shell command: its body and the files its command writes (may be none,
    e.g. `python - <<EOF`)."""

    delimiter: str
    body: str
    targets: tuple[str, ...]


_WRAPPERS = frozenset({"sudo", "env", "command", "time", "nohup", "exec", "xargs"})
_READERS = frozenset({"cat", "head", "tail", "less", "more", "nl", "bat", "wc", "diff", "source", "."})
_VALUE_OPTIONS = {"head": {"-n", "-c"}, "tail": {"-n", "-c"}, "sed": {"-e", "-f"}, "cp": {"-t"}, "mv": {"-t"}}


@lru_cache(maxsize=2048)
def shell_touches(command: str, cwd: str | None = None) -> tuple[FileTouch, ...]:
    """The files a shell command touches (heredoc targets included). Cached: agents repeat
    commands, and every run of the pipeline reads the whole history."""
    script, _ = _split_heredocs(command)
    touches: list[FileTouch] = []
    if "apply_patch" in script and is_patch(command):
        touches += patch_touches(command, cwd)
    for words in _simple_commands(script):
        cwd = _touch_command(words, cwd, touches)
    return tuple(touches)


@lru_cache(maxsize=2048)
def shell_heredocs(command: str, cwd: str | None = None) -> tuple[Heredoc, ...]:
    """Every heredoc of a shell command, in order, with the files its command writes."""
    script, bodies = _split_heredocs(command)
    targets: dict[int, tuple[str, ...]] = {}
    for words in _simple_commands(script):
        touches: list[FileTouch] = []
        cwd = _touch_command(words, cwd, touches)
        for word in words:
            if word.startswith(_SENTINEL):
                targets[int(word[1:])] = tuple(t.path for t in touches if t.action in (WRITE, EDIT))
    return tuple(Heredoc(delimiter, body, targets.get(n, ())) for n, (delimiter, body) in enumerate(bodies))


_SENTINEL = "\x00"
"""Marks where heredoc n was opened (`\x00n`) in the script left after removing the bodies, so
each body is tied to its own simple command; inside quotes it stays part of a quoted word."""


def _split_heredocs(command: str) -> tuple[str, list[tuple[str, str]]]:
    """The command without heredoc bodies (a sentinel word after each opener), and
    (delimiter, body) of each heredoc in order."""
    lines = command.split("\n")
    script: list[str] = []
    bodies: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        openers = _heredoc_openers(line)
        for n, (_, _, end) in reversed(list(enumerate(openers, len(bodies)))):
            line = f"{line[:end]} {_SENTINEL}{n} {line[end:]}"
        script.append(line)
        for delimiter, strip_tabs, _ in openers:
            body: list[str] = []
            while i < len(lines):
                candidate = lines[i].lstrip("\t") if strip_tabs else lines[i]
                i += 1
                if candidate.strip() == delimiter:
                    break
                body.append(lines[i - 1])
            bodies.append((delimiter, "\n".join(body)))
    return "\n".join(script), bodies


def _heredoc_openers(line: str) -> list[tuple[str, bool, int]]:
    """(delimiter, strips tabs, end of the delimiter word) of each heredoc opened on a line
    (`<<EOF`, `<<-'EOF'`, `<< "EOF"`; not the here-string `<<<`)."""
    out = []
    pos = line.find("<<")
    while pos >= 0:
        if line.startswith("<<<", pos):
            pos = line.find("<<", pos + 3)
            continue
        cursor = pos + 2
        strip_tabs = line.startswith("-", cursor)
        cursor += strip_tabs
        while line.startswith(" ", cursor):
            cursor += 1
        quote = line[cursor] if line[cursor:cursor + 1] in ("'", '"') else ""
        cursor += bool(quote)
        start = cursor
        while cursor < len(line) and (line[cursor].isalnum() or line[cursor] in "_-."):
            cursor += 1
        if cursor > start:
            cursor += bool(quote) and line.startswith(quote, cursor)
            out.append((line[start:cursor].rstrip(quote) if quote else line[start:cursor], strip_tabs, cursor))
        pos = line.find("<<", max(cursor, pos + 2))
    return out


_TOKEN = re.compile(r"""
    (?P<op>&&|&>>|&>|\|\||\|&|;;|>>|>\||>&|<<<|<<-|<<|<&|[;&|()\n<>])
  | (?P<word>(?:[^\s;&|()<>'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+)
  | [ \t\r]+
""", re.VERBOSE | re.DOTALL)
_QUOTED = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)""", re.DOTALL)
_SEPARATORS = frozenset({"&&", "||", "|&", ";;", ";", "&", "|", "(", ")", "\n"})


def _unquote_part(match: re.Match[str]) -> str:
    single, double, escaped = match.groups()
    if single is not None:
        return single
    if double is not None:
        return _DOUBLE_ESCAPE.sub(r"\1", double)
    return escaped


_DOUBLE_ESCAPE = re.compile(r'\\([\\"$`])')


def _unquote(word: str) -> str:
    return _QUOTED.sub(_unquote_part, word) if "'" in word or '"' in word or "\\" in word else word


def _simple_commands(script: str) -> list[list[str]]:
    """Words of each simple command (split at `&&`, `||`, `;`, `|`, `&`, parentheses and
    newlines), quotes removed; nothing when the script is unreadable (unbalanced quotes).
    Comment lines and line continuations are dropped first. Linear time."""
    script = "\n".join(line for line in script.replace("\\\n", " ").split("\n") if not line.lstrip().startswith("#"))
    commands: list[list[str]] = [[]]
    pos = 0
    for match in _TOKEN.finditer(script):
        if match.start() != pos:
            return []
        pos = match.end()
        if match.group("op") in _SEPARATORS:
            commands.append([])
        elif match.group("op"):
            commands[-1].append(match.group("op"))
        elif match.group("word"):
            commands[-1].append(_unquote(match.group("word")))
    return [c for c in commands if c] if pos == len(script) else []


_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<", "<<", "<<-", "<<<", ">&", "<&"})
_NOT_FILES = frozenset({"<<", "<<-", "<<<", ">&", "<&"})


def _touch_command(words: list[str], cwd: str | None, touches: list[FileTouch]) -> str | None:
    """Add the touches of one simple command; return the working directory after it."""
    args: list[str] = []
    redirects: list[FileTouch] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word in _REDIRECTS and i + 1 < len(words):
            target = words[i + 1]
            i += 2
            if word in _NOT_FILES or target.isdigit() or target.startswith("/dev/"):
                continue
            path = normalize_path(target, cwd)
            if path:
                redirects.append(FileTouch(path, READ if word == "<" else EDIT if word.endswith(">>") else WRITE))
            continue
        if not word.startswith(_SENTINEL) and not (word.isdigit() and words[i + 1:i + 2] and words[i + 1] in _REDIRECTS):
            args.append(word)
        i += 1
    while args and (args[0] in _WRAPPERS or "=" in args[0] and not args[0].startswith(("=", "-"))):
        args = args[1:]
    if args:
        name, rest = posixpath.basename(args[0]), args[1:]
        if name == "git" and rest[:1] in (["mv"], ["rm"]):
            name, rest = rest[0], rest[1:]
        if name == "cd":
            target = next((a for a in rest if not a.startswith("-")), "")
            return normalize_path(target, cwd) if target.startswith("/") or (cwd and target) else cwd
        touches += _command_touches(name, rest, cwd)
    touches += redirects
    return cwd


def _operands(name: str, args: list[str]) -> list[str]:
    """Arguments that are not options (nor option values)."""
    takes_value = _VALUE_OPTIONS.get(name, set())
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--":
            continue
        elif arg.startswith("-") and arg != "-":
            skip = arg in takes_value
        else:
            out.append(arg)
    return out


def _command_touches(name: str, args: list[str], cwd: str | None) -> list[FileTouch]:
    def paths(values: list[str]) -> list[str]:
        return [p for p in (normalize_path(v, cwd) for v in values if v != "-") if p]

    operands = _operands(name, args)
    if name in _READERS:
        return [FileTouch(p, READ) for p in paths(operands)]
    if name == "sed":
        in_place = any(a.startswith("-i") or a == "--in-place" for a in args)
        has_script_option = any(a in ("-e", "-f") for a in args)
        files = operands if has_script_option else operands[1:]
        return [FileTouch(p, EDIT if in_place else READ) for p in paths(files)]
    if name == "rm":
        return [FileTouch(p, DELETE) for p in paths(operands)]
    if name == "touch":
        return [FileTouch(p, CREATE) for p in paths(operands)]
    if name == "tee":
        action = EDIT if any(a in ("-a", "--append") for a in args) else WRITE
        return [FileTouch(p, action) for p in paths(operands)]
    if name in ("mv", "cp") and len(operands) >= 2:
        *sources, target = paths(operands)
        if not sources:
            return []
        source_action, target_action = (MOVE, CREATE) if name == "mv" else (READ, WRITE)
        if len(sources) == 1:
            return [FileTouch(sources[0], source_action), FileTouch(target, target_action)]
        return [t for s in sources for t in (FileTouch(s, source_action),
                                            FileTouch(posixpath.join(target, posixpath.basename(s)), target_action))]
    return []


# -- what a command runs ------------------------------------------------------------------------

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
    for words in _simple_commands(command):
        while words and (words[0] in _WRAPPERS or "=" in words[0] and not words[0].startswith(("=", "-"))):
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
