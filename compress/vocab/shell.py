"""Which files a shell command touches: `shell_touches(command, cwd)`, and its heredocs.

Reads Bash `command` and Codex `cmd` strings: heredocs (`cat > f <<'EOF'`), redirections (`>`,
`>>`, `<`, `tee`), `cat/head/tail/nl/bat/sed -n/awk` reads, `mv`, `cp`, `rm`, `touch`, `sed -i`,
`git mv/rm`, apply_patch bodies and `cd DIR &&` prefixes (which set the working directory
later relative paths join). Parsing is deliberately shallow (no variables, globs, subshell
tracking); anything it cannot read gives no touch rather than a wrong one. Linear in the command.

PowerShell as Codex runs it on Windows (`shell_command`) is read too: `Get-Content` reads,
`Set-Content`/`Out-File`/`Add-Content` writes, a here-string (`@'…'@`) piped to one is its body,
and a here-string piped to `powershell -Command -` is read as the script it is. What a command
runs (a fix or a look) is `compress.vocab.commands`.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache

from compress.vocab.touches import (
    CREATE,
    DELETE,
    EDIT,
    MOVE,
    READ,
    WRITE,
    FileTouch,
    is_absolute,
    is_patch,
    normalize_path,
    patch_touches,
)


@dataclass(frozen=True, slots=True)
class Heredoc:
    """One heredoc of a shell command: its body and the files its command writes (may be none,
    e.g. `python - <<EOF`)."""

    delimiter: str
    body: str
    targets: tuple[str, ...]


WRAPPERS = frozenset({"sudo", "env", "command", "time", "nohup", "exec", "xargs"})
"""Programs that run the command after them (`sudo cat f` reads f)."""
_READERS = frozenset({"cat", "head", "tail", "less", "more", "nl", "bat", "batcat", "wc", "diff", "source", "."})
_BAT_VALUES = {"-r", "--line-range", "-l", "--language", "-H", "--highlight-line", "-m", "--map-syntax"}
_VALUE_OPTIONS = {"head": {"-n", "-c"}, "tail": {"-n", "-c"}, "sed": {"-e", "-f"}, "awk": {"-f", "-F", "-v"},
                  "bat": _BAT_VALUES, "batcat": _BAT_VALUES, "cp": {"-t"}, "mv": {"-t"},
                  "get-content": {"-totalcount", "-head", "-tail", "-first", "-last", "-encoding", "-readcount",
                                  "-delimiter"},
                  "set-content": {"-encoding", "-value", "-stream", "-delimiter", "-width", "-filepath"}}
_POWERSHELL_READERS = frozenset({"get-content", "gc"})
"""PowerShell's file reader and its alias, compared lower-cased (Codex on Windows runs
`Get-Content path -TotalCount 200` through `shell_command`)."""
_POWERSHELL_WRITERS = {"set-content": WRITE, "out-file": WRITE, "add-content": EDIT}
"""PowerShell cmdlets that write (append to) the file their first operand or `-Path` names; a
here-string piped to one (`@'…'@ | Set-Content f`) is its body (`shell_heredocs`)."""


@lru_cache(maxsize=2048)
def shell_touches(command: str, cwd: str | None = None) -> tuple[FileTouch, ...]:
    """The files a shell command touches (heredoc targets included). Cached: agents repeat
    commands, and every run of the pipeline reads the whole history."""
    script, _ = _split_heredocs(command)
    touches: list[FileTouch] = []
    if "apply_patch" in script and is_patch(command):
        touches += patch_touches(command, cwd)
    for words in simple_commands(script):
        cwd = _touch_command(words, cwd, touches)
    return tuple(touches)


_POWERSHELL_WORDS = ("get-content", "set-content", "add-content", "out-file", "foreach-object", "select-object")


def _is_powershell(script: str) -> bool:
    """The script uses PowerShell's file cmdlets (its backslashes are path separators)."""
    low = script.lower()
    return any(word in low for word in _POWERSHELL_WORDS) or low.split(None, 1)[:1] == ["gc"]


@lru_cache(maxsize=2048)
def shell_heredocs(command: str, cwd: str | None = None) -> tuple[Heredoc, ...]:
    """Every heredoc of a shell command, in order, with the files its command writes."""
    script, bodies = _split_heredocs(command)
    targets: dict[int, tuple[str, ...]] = {}
    for words in simple_commands(script):
        touches: list[FileTouch] = []
        cwd = _touch_command(words, cwd, touches)
        for word in words:
            if word.startswith(_SENTINEL) and word[1:].isascii() and word[1:].isdecimal():  # not a NUL of the command's own
                targets[int(word[1:])] = tuple(t.path for t in touches if t.action in (WRITE, EDIT))
    return tuple(Heredoc(delimiter, body, targets.get(n, ())) for n, (delimiter, body) in enumerate(bodies))


_SENTINEL = "\x00"
"""Marks where heredoc n was opened (`\x00n`) in the script left after removing the bodies, so
each body is tied to its own simple command; inside quotes it stays part of a quoted word."""


def script_of(command: str) -> str:
    """The command without its heredoc bodies (a PowerShell script piped to PowerShell inlined)."""
    return _split_heredocs(command)[0]


def _split_heredocs(command: str) -> tuple[str, list[tuple[str, str]]]:
    """The command without heredoc bodies (a sentinel word after each opener), and
    (delimiter, body) of each heredoc in order. In a PowerShell script (`_is_powershell`)
    backslashes separate paths and escape nothing: they become `/`."""
    lines = command.split("\n")
    script: list[str] = []
    bodies: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if (quote := _here_string_quote(line)) and (end := _here_string_end(lines, i, quote)) is not None:
            if _runs_script(lines[end]):  # `@'…'@ | powershell -Command -`: the body is the script
                script += lines[i:end]
                i = end + 1
                continue
            script.append(f"{line.rstrip()[:-2]}{_here_string_command(lines[end], len(bodies))}")
            bodies.append((quote + "@", "\n".join(lines[i:end])))
            i = end + 1
            continue
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
    joined = "\n".join(script)
    return (joined.replace("\\", "/") if _is_powershell(joined) else joined), bodies


def _here_string_quote(line: str) -> str:
    """The quote of a PowerShell here-string opened at the end of `line` (`@'` or `@"`), else ''."""
    end = line.rstrip()
    return end[-1] if end.endswith(("@'", '@"')) else ""


def _here_string_end(lines: list[str], start: int, quote: str) -> int | None:
    """The line from `start` on that closes a here-string (it starts with `'@` / `"@`), if any."""
    return next((j for j in range(start, len(lines)) if lines[j].startswith(quote + "@")), None)


def _runs_script(closing: str) -> bool:
    """A here-string's closing line pipes it to PowerShell as the script to run."""
    words = closing[2:].lower().replace("|", " ").split()
    return bool(words) and words[0] in ("powershell", "pwsh", "powershell.exe", "pwsh.exe") and words[-2:] == [
        "-command", "-"]


def _here_string_command(closing: str, n: int) -> str:
    """The script a here-string's closing line leaves: what it is piped to, with its sentinel
    (`'@ | Set-Content -NoNewline src\\a.ts` -> `Set-Content -NoNewline src\\a.ts \x00n`), so the
    body is tied to the command that writes it."""
    rest = closing[2:].strip()
    target = rest[1:].strip() if rest.startswith("|") else rest
    return f"{target} {_SENTINEL}{n}" if rest.startswith("|") else f" {_SENTINEL}{n} {rest}"


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


def simple_commands(script: str) -> list[list[str]]:
    """Words of each simple command (split at `&&`, `||`, `;`, `|`, `&`, parentheses and
    newlines), quotes removed; nothing when the script is unreadable (unbalanced quotes).
    Comment lines and line continuations are dropped first. Linear time."""
    return [words for pipeline in pipelines(script) for words in pipeline]


_PIPES = frozenset({"|", "|&"})


def pipelines(script: str) -> list[list[list[str]]]:
    """The simple commands of `simple_commands`, grouped into pipelines: the commands one `|`
    (or `|&`) joins are one pipeline, in order; any other separator starts the next."""
    script = "\n".join(line for line in script.replace("\\\n", " ").split("\n") if not line.lstrip().startswith("#"))
    out: list[list[list[str]]] = [[[]]]
    pos = 0
    for match in _TOKEN.finditer(script):
        if match.start() != pos:
            return []
        pos = match.end()
        if match.group("op") in _PIPES:
            out[-1].append([])
        elif match.group("op") in _SEPARATORS:
            out.append([[]])
        elif match.group("op"):
            out[-1][-1].append(match.group("op"))
        elif match.group("word"):
            out[-1][-1].append(_unquote(match.group("word")))
    if pos != len(script):
        return []
    return [p for p in ([c for c in pipeline if c] for pipeline in out) if p]


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
    while args and (args[0] in WRAPPERS or "=" in args[0] and not args[0].startswith(("=", "-"))):
        args = args[1:]
    if args:
        name, rest = posixpath.basename(args[0]), args[1:]
        if name == "git" and rest[:1] in (["mv"], ["rm"]):
            name, rest = rest[0], rest[1:]
        if name == "cd":
            target = next((a for a in rest if not a.startswith("-")), "")
            return normalize_path(target, cwd) if is_absolute(target) or (cwd and target) else cwd
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
            skip = (arg.lower() if name in ("get-content", "set-content") else arg) in takes_value
        else:
            out.append(arg)
    return out


_BACKUP_SUFFIX = re.compile(r"\.[\w.~-]*")


def _without_backup_suffix(args: list[str]) -> list[str]:
    """sed's arguments without a backup suffix given as its own argument after `-i` (BSD and
    macOS sed: `sed -i '' 's/a/b/' f`, `sed -i .bak …`), which would otherwise read as the script."""
    for i, arg in enumerate(args[:-1]):
        if arg == "-i" and (args[i + 1] == "" or _BACKUP_SUFFIX.fullmatch(args[i + 1])):
            return args[:i + 1] + args[i + 2:]
    return args


def _command_touches(name: str, args: list[str], cwd: str | None) -> list[FileTouch]:
    def paths(values: list[str]) -> list[str]:
        return [p for p in (normalize_path(v, cwd) for v in values if v != "-") if p]

    if name.lower() in _POWERSHELL_WRITERS:
        operands = _operands("set-content", args)
        return [FileTouch(p, _POWERSHELL_WRITERS[name.lower()]) for p in paths(operands[:1])]
    if name.lower() in _POWERSHELL_READERS:
        operands = _operands("get-content", args)
        return [FileTouch(p, READ) for p in paths(operands)]
    operands = _operands(name, _without_backup_suffix(args) if name == "sed" else args)
    if name in _READERS:
        return [FileTouch(p, READ) for p in paths(operands)]
    if name in ("sed", "awk"):  # the script first, unless an option gives it
        in_place = name == "sed" and any(a.startswith("-i") or a == "--in-place" for a in args)
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
