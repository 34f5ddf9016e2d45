"""Which kind of tool produced a result: decides how a stage may shorten it.

Decided from the tool name first, then from the command of shell calls (`cat f` reads a file,
`rg x` searches), so Claude Code, Codex, OpenCode and SWE-agent tools map alike.
"""

from __future__ import annotations

from enum import Enum
from typing import Any


class ToolKind(Enum):
    FILE_READ = "file_read"
    COMMAND = "command"
    SEARCH = "search"
    FILE_LIST = "file_list"
    SUBAGENT_WEB = "subagent_web"
    OTHER = "other"


_BY_NAME = {
    ToolKind.FILE_READ: {"read", "read_file", "view", "cat", "open", "open_file", "readfile", "view_file", "notebookread"},
    ToolKind.COMMAND: {"bash", "shell", "exec_command", "run_terminal_cmd", "execute_command", "local_shell",
                       "run_command", "terminal", "powershell", "container.exec", "execute_bash"},
    ToolKind.SEARCH: {"grep", "rg", "search", "search_files", "codebase_search", "search_dir", "search_file",
                      "find_in_files", "grep_search", "ripgrep"},
    ToolKind.FILE_LIST: {"glob", "ls", "list_dir", "list_files", "find", "find_file", "list_directory"},
    ToolKind.SUBAGENT_WEB: {"task", "agent", "webfetch", "web_fetch", "websearch", "web_search", "fetch",
                            "browser", "read_url"},
}
_NAME_INDEX = {name: kind for kind, names in _BY_NAME.items() for name in names}

_COMMAND_PREFIXES = (
    (ToolKind.FILE_READ, ("cat ", "head ", "tail ", "sed -n", "less ", "bat ", "nl ")),
    (ToolKind.SEARCH, ("grep ", "rg ", "ag ", "git grep", "ack ")),
    (ToolKind.FILE_LIST, ("ls", "find ", "tree", "fd ", "git ls-files")),
)


def command_of(tool_input: Any) -> str:
    """The shell command of a command-tool call ('' if none)."""
    if not isinstance(tool_input, dict):
        return ""
    value = tool_input.get("command", tool_input.get("cmd", ""))
    if isinstance(value, list):  # Codex: ["bash", "-lc", "cat x"]
        value = value[-1] if value else ""
    return value.strip() if isinstance(value, str) else ""


def rerun_hint(name: str, tool_input: Any) -> str:
    """What to run to see a tool's output again, for CCR's "expired" message."""
    command = command_of(tool_input)
    if command:
        what = command
    else:
        from compress.toolfiles import touched_files

        paths = [t.path for t in touched_files(name, tool_input)]
        what = f"{name} {paths[0]}" if paths else name
    what = " ".join(what.split())
    return f"re-run the tool call `{what[:117] + '...' if len(what) > 120 else what}`"


def tool_kind(name: str, tool_input: Any = None) -> ToolKind:
    low = name.lower()
    base = low.rsplit("__", 1)[-1] if low.startswith("mcp__") else low
    kind = _NAME_INDEX.get(base, ToolKind.OTHER)
    if kind is ToolKind.COMMAND:
        command = command_of(tool_input)
        if "|" not in command and "&&" not in command and ";" not in command:
            for candidate, prefixes in _COMMAND_PREFIXES:
                if command.startswith(prefixes):
                    return candidate
    return kind

