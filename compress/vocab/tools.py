"""The hosts' tools by name: what kind each is, what it does to the file it names, which are protected.

Names are compared lower-cased, an MCP tool `mcp__server__name` by its last part (`base_name`),
so Claude Code, Codex, OpenCode and SWE-agent tools map alike. The kind of a shell call is then
told by its command (`cat f` reads a file, `rg x` searches; a compound command whose output is the
text of files it reads, `compress.vocab.commands.shows_files`, is a read of them too), and that of a Codex
code-mode `exec` program by the tool calls it makes (`compress.vocab.codemode`). Kept light (no
regex; shell and JavaScript parsers imported only for compound commands and programs): the faces
import it for the protected-tools default.
"""

from __future__ import annotations

from enum import Enum

from compress.vocab.input_keys import ECHOED_KEYS as ECHOED_KEYS  # re-exported: the stages read the keys here
from compress.vocab.input_keys import OLD_TEXT_KEYS, WRITTEN_KEYS
from compress.vocab.input_keys import PATH_KEYS as PATH_KEYS
from compress.vocab.touches import DELETE, EDIT, READ, WRITE

TYPE_CHECKING = False  # as typing.TYPE_CHECKING: the faces read PROTECTED_TOOLS without importing typing
if TYPE_CHECKING:
    from typing import Any


class ToolKind(Enum):
    FILE_READ = "file_read"
    COMMAND = "command"
    SEARCH = "search"
    FILE_LIST = "file_list"
    SUBAGENT_WEB = "subagent_web"
    OTHER = "other"


SUBAGENT_TOOLS = frozenset({"task", "agent"})
"""Tools that run a subagent and answer with its report (Claude Code Task/Agent, OpenCode task)."""

_BY_KIND = {
    ToolKind.FILE_READ: {"read", "read_file", "view", "cat", "open", "open_file", "readfile", "view_file", "notebookread"},
    ToolKind.COMMAND: {"bash", "shell", "shell_command", "exec_command", "run_terminal_cmd", "execute_command", "local_shell",
                       "run_command", "terminal", "powershell", "container.exec", "execute_bash"},
    ToolKind.SEARCH: {"grep", "rg", "search", "search_files", "codebase_search", "search_dir", "search_file",
                      "find_in_files", "grep_search", "ripgrep"},
    ToolKind.FILE_LIST: {"glob", "ls", "list_dir", "list_files", "find", "find_file", "list_directory"},
    ToolKind.SUBAGENT_WEB: SUBAGENT_TOOLS | {"webfetch", "web_fetch", "websearch", "web_search", "fetch", "browser", "read_url"},
}
_KIND_OF = {name: kind for kind, names in _BY_KIND.items() for name in names}

_COMMAND_PREFIXES = (
    (ToolKind.FILE_READ, ("cat ", "head ", "tail ", "sed -n", "less ", "more ", "bat ", "batcat ", "nl ", "get-content ",
                        "gc ")),
    (ToolKind.SEARCH, ("grep ", "rg ", "ag ", "git grep", "ack ", "select-string ", "findstr ")),
    (ToolKind.FILE_LIST, ("ls", "find ", "tree", "fd ", "git ls-files", "get-childitem", "gci ", "dir ")),
)
"""What a single shell command is, by how it starts (lower-cased: PowerShell's cmdlets are
case-insensitive; Codex on Windows runs them through `shell_command`)."""

_BY_FILE_ACTION = {
    READ: {"read", "read_file", "readfile", "view", "view_file", "open", "open_file", "cat", "notebookread",
           "read_notebook"},
    WRITE: {"write", "write_file", "writefile", "create_file", "create"},
    EDIT: {"edit", "multiedit", "notebookedit", "edit_file", "str_replace", "replace", "replace_in_file",
           "search_replace", "insert"},
    DELETE: {"delete_file", "remove_file", "delete"},
}
"""File tools: what a call does to the file its input names (`PATH_KEYS`)."""
_FILE_ACTION_OF = {name: action for action, names in _BY_FILE_ACTION.items() for name in names}
_EDITOR_ACTIONS = {"view": READ, "create": WRITE, "str_replace": EDIT, "insert": EDIT, "undo_edit": EDIT}
"""Anthropic's `str_replace_based_edit_tool` (`str_replace_editor…`): its `command` -> action."""
PATCH_TOOLS = frozenset({"apply_patch", "patch", "applypatch"})
"""Tools (and Codex argv programs) whose input is an apply_patch body."""
CODE_MODE_TOOLS = frozenset({"exec"})
"""Tools whose input is a program calling the other tools (Codex's code mode,
`compress.vocab.codemode`): such a call is read as the calls it makes."""
BOOKKEEPING_TOOLS = frozenset({"taskoutput", "bashoutput", "todowrite", "todoread", "todo_write", "askuserquestion",
                               "question", "skill", "toolsearch", "enterplanmode", "exitplanmode", "killshell"})
"""Tools that keep the session's books (todos, questions, plans, background output), not the project's."""
PROTECTED_TOOLS = frozenset({
    "edit", "multiedit", "notebookedit", "apply_patch", "str_replace_based_edit_tool",
    "todowrite", "todoread", "todo_write", "question", "askuserquestion", "exitplanmode",
    "deep_expand", "skill",
})
"""Tools whose results are never compressed; `is_protected_tool` also protects memory_* and
every name holding deep_expand. A subagent's report is not among them: it is the agent's working
material while fresh and history after (`trim_outputs`, `report_fresh_turns`). Nor is a whole-file
write: its result is a one-line confirmation, or (Claude Code up to 2.1.39) a numbered echo of
the whole file, a second copy of the body its call holds, which is then cut on arrival like other
tool output while the body stays (corpus replay: effective 0.648 -> 0.645, needed lines the same;
three long sessions' echoes had cost more than the decide-once cap's whole tool output)."""


def base_name(name: str) -> str:
    """The lower-cased tool name, an MCP tool's (`mcp__server__name`) without its server."""
    low = name.lower()
    return low.rsplit("__", 1)[-1] if low.startswith("mcp__") else low


def is_protected_tool(name: str, protected: frozenset[str], tool_input: Any = None) -> bool:
    """Results of this tool are never compressed (`protected`: base names, lower-cased), but for
    the text editor tool's `view` (`tool_input`), a file read like any other: that one tool both
    reads and edits, and only its edits are protected."""
    base = base_name(name)
    if _is_editor(base) and tool_kind(name, tool_input) is ToolKind.FILE_READ:
        return False
    return base in protected or base.startswith("memory_") or "deep_expand" in base


def is_subagent(name: str) -> bool:
    """A tool that answers with a subagent's report (`SUBAGENT_TOOLS`)."""
    return base_name(name) in SUBAGENT_TOOLS


def is_memory_tool(name: str) -> bool:
    """A ctxmill memory tool (`memory_store`, …) under any `server__` prefix."""
    return name.lower().rsplit("__", 1)[-1].startswith("memory_")


def replaced_texts(tool_input: Any) -> list[str]:
    """The old texts an edit call replaces (`OLD_TEXT_KEYS`, also inside a MultiEdit's `edits`);
    [] for any other call."""
    return _texts_at(tool_input, OLD_TEXT_KEYS)


def new_texts(tool_input: Any) -> list[str]:
    """The texts a file tool's call writes (`WRITTEN_KEYS`, also inside a MultiEdit's `edits`);
    [] for any other call."""
    return _texts_at(tool_input, WRITTEN_KEYS)


def _texts_at(tool_input: Any, keys: tuple[str, ...]) -> list[str]:
    if not isinstance(tool_input, dict):
        return []
    edits = tool_input.get("edits")
    items = [tool_input] + (edits if isinstance(edits, list) else [])
    return [value for item in items if isinstance(item, dict)
            for key in keys if isinstance(value := item.get(key), str) and value]


def command_of(tool_input: Any) -> str:
    """The shell command of a command-tool call ('' if none)."""
    if not isinstance(tool_input, dict):
        return ""
    value = tool_input.get("command", tool_input.get("cmd", ""))
    if isinstance(value, list):  # Codex: ["bash", "-lc", "cat x"]
        value = value[-1] if value else ""
    return value.strip() if isinstance(value, str) else ""


def tool_kind(name: str, tool_input: Any = None) -> ToolKind:
    base = base_name(name)
    if base in CODE_MODE_TOOLS:
        from compress.vocab.codemode import nested_calls  # a JavaScript parser, only for code mode

        if calls := nested_calls(tool_input):
            return _program_kind([tool_kind(called, arg) for called, arg in calls])
    if _is_editor(base):
        return ToolKind.FILE_READ if isinstance(tool_input, dict) and file_tool_action(base, tool_input) == READ \
            else ToolKind.OTHER
    kind = _KIND_OF.get(base, ToolKind.OTHER)
    if kind is ToolKind.COMMAND:
        command = command_of(tool_input)
        low = command.lower()
        compound = "|" in low or "&&" in low or ";" in low or "\n" in low
        if not compound:
            for candidate, prefixes in _COMMAND_PREFIXES:
                if low.startswith(prefixes):
                    return candidate
        if compound or low.startswith(("awk ", "sed ")):  # awk and sed print a file's lines by their script
            from compress.vocab.commands import shows_files  # shell parsing only for these commands
            if shows_files(command):
                return ToolKind.FILE_READ
    return kind


def _program_kind(kinds: list[ToolKind]) -> ToolKind:
    """The kind of a code-mode program's output, from the kinds of the calls it makes: a read if
    any call reads a file (its output holds the lines the agent edits from), else the one kind
    they share, else command output."""
    if ToolKind.FILE_READ in kinds:
        return ToolKind.FILE_READ
    return kinds[0] if len(set(kinds)) == 1 else ToolKind.COMMAND


def _is_editor(base: str) -> bool:
    """Anthropic's text editor tool (`str_replace_based_edit_tool`, `str_replace_editor…`)."""
    return base == "str_replace_based_edit_tool" or base.startswith("str_replace_editor")


def file_tool_action(base: str, tool_input: dict) -> str | None:
    """What a file tool (by `base_name`) does to the file its input names; None for other tools."""
    if _is_editor(base):
        return _EDITOR_ACTIONS.get(str(tool_input.get("command", "")))
    return _FILE_ACTION_OF.get(base)
