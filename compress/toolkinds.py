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


_WRITE_TOOLS = {"write", "edit", "multiedit", "notebookedit", "write_file", "edit_file", "create_file",
                "str_replace_editor", "str_replace_based_edit_tool", "create", "insert", "patch", "apply_patch"}
_PATH_KEYS = ("file_path", "filePath", "path", "notebook_path", "filename", "file")
_PATCH_FILE_LINE = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")


def written_paths(name: str, tool_input: Any) -> list[str]:
    """Paths a call writes or edits (Claude Code, opencode, Codex apply_patch, SWE-agent editors);
    [] for any other call. Read-only editor commands (`view`) write nothing."""
    low = name.lower()
    base = low.rsplit("__", 1)[-1] if low.startswith("mcp__") else low
    if base not in _WRITE_TOOLS or not isinstance(tool_input, dict):
        return []
    if tool_input.get("command") == "view":
        return []
    patch = tool_input.get("input", tool_input.get("patch"))
    if base in ("apply_patch", "patch") and isinstance(patch, str):
        return [line.split(": ", 1)[1].strip() for line in patch.splitlines() if line.startswith(_PATCH_FILE_LINE)]
    return [v for k in _PATH_KEYS if isinstance(v := tool_input.get(k), str) and v][:1]
