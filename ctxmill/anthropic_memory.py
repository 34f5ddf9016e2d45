"""Anthropic's memory tool (`memory_20250818`) for the Anthropic Python SDK, kept in ctxmill's memory.

    from anthropic import Anthropic
    from ctxmill.anthropic_memory import CtxmillMemoryTool

    runner = Anthropic().beta.messages.tool_runner(
        model="claude-sonnet-4-5", max_tokens=2048, tools=[CtxmillMemoryTool()],
        messages=[{"role": "user", "content": "Remember that the staging database is read-only."}])

The model's `/memories/…` files become entries of the project's MEMORY.md (see memory.files), so
`ctxmill memory search`, the MCP server's `memory_search` and the hooks find them, and every
write is redacted, locked and atomic. Results and error texts follow the SDK's own
`BetaLocalFilesystemMemoryTool`, so the model reads what it would read with files on disk; a
refused command raises `ToolError`, which the SDK's tool runner returns as an `is_error`
tool result. Refused: paths outside `/memories` or with `.`/`..`, escapes, control characters
or secrets (memory.files.canonical), files over `Limits.file_bytes`, all files over
`Limits.total_bytes`.

Needs the SDK: `pip install 'ctxmill[anthropic]'`. Nothing else in ctxmill imports this module.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

try:
    from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("ctxmill.anthropic_memory needs the Anthropic SDK: pip install 'ctxmill[anthropic]'") from exc

from memory.config import MemoryConfig
from memory.files import ROOT, FileError, Files, Limits, MemoryFiles, Stored, canonical

LINE_NUMBER_WIDTH = 6  # as the SDK numbers lines
VIEW_CHARS = 16_000  # a file view's length; the model is told views of longer files are cut
_REDACTED_NOTE = "\nNote: secret-like text was replaced by [REDACTED:<kind>] before it was stored."

__all__ = ["CtxmillMemoryTool", "AsyncCtxmillMemoryTool", "Limits"]


class CtxmillMemoryTool(BetaAbstractMemoryTool):
    """The memory tool over `cfg`'s MEMORY.md (by default: the memory settings of `project_home`,
    itself found from the working directory like the CLI does; ctxmill.settings.ConfigError when
    its config.toml is invalid)."""

    def __init__(self, cfg: MemoryConfig | None = None, *, project_home: Path | None = None, scope: str = "project",
                 entry_type: str = "note", limits: Limits = Limits(), cache_control=None) -> None:
        super().__init__(cache_control=cache_control)
        if cfg is None:
            from ctxmill.settings import Settings

            cfg = Settings.load(project_home).memory
        self.files = MemoryFiles(cfg, scope, entry_type, limits)

    def view(self, command) -> str:
        path = _path(_field(command, "path", str))
        files = self.files.read()
        content = files.content(path)
        if content is not None:
            return _view_file(path, content, getattr(command, "view_range", None))
        if files.is_dir(path):
            return _view_dir(files, path)
        raise _missing(path)

    def create(self, command) -> str:
        """Create the file, or overwrite it: the model is told `create` "creates or overwrites"."""
        path = _path(_field(command, "path", str))
        text = _field(command, "file_text", str)
        with _refusals(), self.files.change() as files:
            existed = files.content(path) is not None
            if not existed and files.is_dir(path):
                raise ToolError(f"Cannot create {path}: it is a directory")
            stored = files.write(path, text)
        done = f"File {path} overwritten successfully." if existed else f"File created successfully at: {path}"
        return done + _note(stored)

    def str_replace(self, command) -> str:
        path = _path(_field(command, "path", str))
        old = _field(command, "old_str", str)
        new = _field(command, "new_str", str) if getattr(command, "new_str", None) is not None else ""
        if not old:
            raise ToolError("No replacement was performed: old_str is empty.")
        with _refusals(), self.files.change() as files:
            content = _existing_file(files, path)
            count = content.count(old)
            if count == 0:
                raise ToolError(f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}.")
            if count > 1:
                numbers = ", ".join(str(n) for n in _match_lines(content, old))
                raise ToolError(f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
                                f"{numbers}. Please ensure it is unique")
            changed_line = content[: content.find(old)].count("\n")
            stored = files.write(path, content.replace(old, new))
        lines = stored.content.split("\n")
        start = max(0, min(changed_line, len(lines) - 1) - 2)
        snippet = _numbered(lines[start : changed_line + 3], start + 1)
        return ("The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
                + snippet + _note(stored))

    def insert(self, command) -> str:
        path = _path(_field(command, "path", str))
        at, text = _field(command, "insert_line", int), _field(command, "insert_text", str)
        with _refusals(), self.files.change() as files:
            content = _existing_file(files, path)
            lines = content.split("\n") if content else []
            if not 0 <= at <= len(lines):
                raise ToolError(f"Invalid `insert_line` parameter: {at}. "
                                f"It should be within the range of lines of the file: [0, {len(lines)}]")
            lines.insert(at, text.rstrip("\n"))
            stored = files.write(path, "\n".join(lines))
        return f"The file {path} has been edited." + _note(stored)

    def delete(self, command) -> str:
        path = _path(_field(command, "path", str))
        if path == ROOT:
            raise ToolError(f"Cannot delete the {ROOT} directory itself")
        with _refusals(), self.files.change() as files:
            if not files.delete(path):
                raise ToolError(f"The path {path} does not exist")
        return f"Successfully deleted {path}"

    def rename(self, command) -> str:
        old = _path(_field(command, "old_path", str))
        new = _path(_field(command, "new_path", str))
        if old == ROOT:
            raise ToolError(f"Cannot rename the {ROOT} directory itself")
        with _refusals(), self.files.change() as files:
            if files.content(old) is None and not files.is_dir(old):
                raise ToolError(f"The path {old} does not exist")
            if files.content(new) is not None or files.is_dir(new):
                raise ToolError(f"The destination {new} already exists")
            files.move(old, new)
        return f"Successfully renamed {old} to {new}"

    def clear_all_memory(self) -> str:
        """Delete every memory file (other MEMORY.md entries stay)."""
        with self.files.change() as files:
            files.delete(ROOT)
        return "All memory cleared"


def _in_thread(name: str):
    async def method(self, command=None):
        from anyio.to_thread import run_sync  # the SDK's own dependency

        call = getattr(self.sync, name)
        return await run_sync(call) if command is None else await run_sync(call, command)

    method.__name__ = name
    return method


class AsyncCtxmillMemoryTool(BetaAsyncAbstractMemoryTool):
    """The same tool for the SDK's async runner: each command runs `CtxmillMemoryTool` in a worker thread."""

    def __init__(self, cfg: MemoryConfig | None = None, **options) -> None:
        super().__init__(cache_control=options.get("cache_control"))
        self.sync = CtxmillMemoryTool(cfg, **options)

    view, create, str_replace = _in_thread("view"), _in_thread("create"), _in_thread("str_replace")
    insert, delete, rename = _in_thread("insert"), _in_thread("delete"), _in_thread("rename")
    clear_all_memory = _in_thread("clear_all_memory")


@contextmanager
def _refusals():
    """memory.files' refusals as the ToolError the SDK's runner reports (nothing was written)."""
    try:
        yield
    except FileError as exc:
        raise ToolError(str(exc)) from exc


def _field(command, name: str, kind: type):
    value = getattr(command, name, None)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ToolError(f"Missing or invalid `{name}` parameter for the {getattr(command, 'command', '?')} command")
    return value


def _path(raw: str) -> str:
    try:
        return canonical(raw)
    except FileError as exc:
        raise ToolError(str(exc)) from exc


def _missing(path: str) -> ToolError:
    return ToolError(f"The path {path} does not exist. Please provide a valid path.")


def _existing_file(files: Files, path: str) -> str:
    """The file's content; a directory, like a missing path, "does not exist" (as the tool's docs say)."""
    content = files.content(path)
    if content is None:
        raise _missing(path)
    return content


def _note(stored: Stored) -> str:
    return _REDACTED_NOTE if stored.redacted else ""


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{n:>{LINE_NUMBER_WIDTH}}\t{line}" for n, line in enumerate(lines, first))


def _match_lines(content: str, needle: str) -> list[int]:
    """The lines where `needle` occurs, each once (one scan)."""
    found: list[int] = []
    line, counted, at = 1, 0, content.find(needle)
    while at != -1:
        line += content.count("\n", counted, at)
        if not found or found[-1] != line:
            found.append(line)
        counted, at = at, content.find(needle, at + 1)
    return found


def _view_file(path: str, content: str, view_range) -> str:
    """Numbered lines, at most VIEW_CHARS of them (whole lines; a note says how to see the rest)."""
    lines, first = content.split("\n"), 1
    total = len(lines)
    if view_range is not None:
        if (not isinstance(view_range, list) or len(view_range) != 2
                or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)):
            raise ToolError(f"Invalid `view_range` parameter: {view_range!r}. It should be a list of two integers "
                            "[start, end]; end -1 means the last line.")
        start, end = view_range
        if not 1 <= start <= total or (end != -1 and end < start):
            raise ToolError(f"Invalid `view_range` parameter: {view_range}. Lines are numbered 1 to {total}; "
                            "end must be -1 or at least start.")
        first, lines = start, lines[start - 1 : None if end == -1 else end]
    rows: list[str] = []
    used = 0
    for number, line in enumerate(lines, first):
        row = f"{number:>{LINE_NUMBER_WIDTH}}\t{line}"
        used += len(row) + 1
        if rows and used > VIEW_CHARS:
            break
        rows.append(row)
    text = f"Here's the content of {path} with line numbers:\n" + "\n".join(rows)
    if len(rows) < len(lines):
        last = first + len(rows) - 1
        text += (f"\n[lines {first}-{last} of {total} shown, the view's limit is {VIEW_CHARS:,} characters: "
                 f"view_range [{last + 1}, -1] shows the rest]")
    return text


def _view_dir(files: Files, path: str) -> str:
    """The SDK's listing: files and directories up to 2 levels below `path` (hidden names and
    node_modules left out), each with its size; a directory's is the bytes of all files below it."""
    shown: dict[tuple[str, ...], str] = {}  # sort key (a directory's ends with "") -> path
    for file in files.below(path):
        names = file[len(path) + 1 :].split("/")
        if any(name.startswith(".") or name == "node_modules" for name in names[:2]):
            continue
        for depth in range(1, min(len(names), 2) + 1):
            key = tuple(names[:depth]) + (("",) if depth < len(names) else ())
            shown[key] = f"{path}/{'/'.join(names[:depth])}"
    lines = [f"{_size(files.size(path))}\t{path}"]
    lines += [f"{_size(files.size(full))}\t{full}{'/' if key[-1] == '' else ''}" for key, full in sorted(shown.items())]
    return (f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items and "
            "node_modules:\n" + "\n".join(lines))


def _size(n: int) -> str:
    """1536 -> '1.5K', as the SDK writes sizes."""
    unit = 0
    while n >= 1024 ** (unit + 1) and unit < 3:
        unit += 1
    value = n / 1024**unit
    return f"{value:.0f}{'BKMG'[unit]}" if value == int(value) else f"{value:.1f}{'BKMG'[unit]}"
