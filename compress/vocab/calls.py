"""One tool call read the way its host meant it: the files it touches, and how to run it again.

`touched_files(tool_name, tool_input)` understands the file tools of Claude Code (Read, Write,
Edit, MultiEdit, NotebookEdit), OpenCode (read, write, edit with `filePath`), Anthropic's
`str_replace_based_edit_tool`, `read_file` / `write_file` style tools (`compress.vocab.tools`),
apply_patch bodies (`compress.vocab.touches`), shell commands (Bash `command`, Codex `cmd`
strings or argv lists; `compress.vocab.shell`) and Codex code-mode programs (the calls they make,
`compress.vocab.codemode`). A relative path is joined to the call's working
directory when the input names one (`workdir`, `cwd`, or a leading `cd DIR &&`).
"""

from __future__ import annotations

import posixpath
from typing import Any

from compress.vocab.codemode import nested_calls
from compress.vocab.input_keys import PATCH_KEYS, PATH_KEYS
from compress.vocab.shell import shell_heredocs, shell_touches
from compress.vocab.tools import (
    CODE_MODE_TOOLS,
    PATCH_TOOLS,
    ToolKind,
    base_name,
    command_of,
    file_tool_action,
    new_texts,
    replaced_texts,
    tool_kind,
)
from compress.vocab.touches import (
    FileTouch,
    is_absolute,
    is_patch,
    normalize_path,
    patch_new_lines,
    patch_old_lines,
    patch_touches,
)


def touched_files(tool_name: str, tool_input: Any) -> list[FileTouch]:
    """The files one tool call touches, in the order the call touches them (a code-mode
    program's: those of the calls it makes)."""
    base = base_name(tool_name)
    if calls := _program_calls(base, tool_input):
        return [touch for name, arg in calls for touch in touched_files(name, arg)]
    cwd = _input_cwd(tool_input)
    if base in PATCH_TOOLS:
        return patch_touches(_patch_text(tool_input), cwd)
    if tool_kind(tool_name) is ToolKind.COMMAND or _argv(tool_input):
        argv = _argv(tool_input)
        if argv and posixpath.basename(argv[0]) in PATCH_TOOLS:
            return patch_touches(argv[-1], cwd)
        return list(shell_touches(command_of(tool_input), cwd))
    if not isinstance(tool_input, dict):
        return []
    path = normalize_path(_first_str(tool_input, PATH_KEYS), cwd)
    action = file_tool_action(base, tool_input) if path else None
    return [FileTouch(path, action)] if action else []


def copied_texts(tool_name: str, tool_input: Any) -> list[str]:
    """The texts one call copies out of what the model has seen of a file: the old texts of an
    edit (`compress.vocab.tools.replaced_texts`), or the context and removed lines of an
    apply_patch body (a patch tool's, a Codex argv's, or one run from a shell command); a
    code-mode program's: those of the calls it makes."""
    if calls := _program_calls(base_name(tool_name), tool_input):
        return [text for name, arg in calls for text in copied_texts(name, arg)]
    patch = _patch_of(tool_name, tool_input)
    return ["\n".join(patch_old_lines(patch))] if patch else replaced_texts(tool_input)


def written_texts(tool_name: str, tool_input: Any) -> list[str]:
    """The texts one call leaves in the files it writes: a write's body or an edit's new text
    (`compress.vocab.tools.new_texts`), the added and context lines of an apply_patch body, the
    body of a shell heredoc that writes a file; a code-mode program's: those of the calls it
    makes."""
    if calls := _program_calls(base_name(tool_name), tool_input):
        return [text for name, arg in calls for text in written_texts(name, arg)]
    if patch := _patch_of(tool_name, tool_input):
        return ["\n".join(patch_new_lines(patch))]
    if tool_kind(tool_name) is ToolKind.COMMAND:
        return [heredoc.body for heredoc in shell_heredocs(command_of(tool_input)) if heredoc.targets]
    return new_texts(tool_input)


def _patch_of(tool_name: str, tool_input: Any) -> str:
    """The apply_patch body one call applies ('' if none): a patch tool's, a Codex argv's, or
    one run from a shell command."""
    if base_name(tool_name) in PATCH_TOOLS:
        return _patch_text(tool_input)
    if (argv := _argv(tool_input)) and posixpath.basename(argv[0]) in PATCH_TOOLS:
        return argv[-1]
    if tool_kind(tool_name) is ToolKind.COMMAND and "apply_patch" in (command := command_of(tool_input)) \
            and is_patch(command):
        return command
    return ""


def first_path(tool_name: str, tool_input: Any) -> str:
    """The first file one tool call touches ('' if none): the file a read reads."""
    return next((t.path for t in touched_files(tool_name, tool_input)), "")


def rerun_hint(name: str, tool_input: Any) -> str:
    """What to run to see a tool's output again, for CCR's "expired" message (for a code-mode
    program, its first call's)."""
    if calls := _program_calls(base_name(name), tool_input):
        name, tool_input = calls[0]
    command = command_of(tool_input)
    if command:
        what = command
    else:
        paths = [t.path for t in touched_files(name, tool_input)]
        what = f"{name} {paths[0]}" if paths else name
    from ground.redact import redact  # before the hint is put on one line and cut short: after, a
    # secret wrapped or spread over lines (a YAML block, a split string) no longer has its shape

    what = " ".join(redact(what).split())
    return f"re-run the tool call `{what[:117] + '...' if len(what) > 120 else what}`"


def _argv(tool_input: Any) -> list[str]:
    """A Codex-style argv `command` (`["bash", "-lc", "..."]`, `["apply_patch", "..."]`), else []."""
    value = tool_input.get("command") if isinstance(tool_input, dict) else None
    return value if isinstance(value, list) and value and all(isinstance(v, str) for v in value) else []


def _input_cwd(tool_input: Any) -> str | None:
    if isinstance(tool_input, dict):
        value = tool_input.get("workdir", tool_input.get("cwd"))
        if isinstance(value, str) and is_absolute(value):
            return value
    return None


def _first_str(value: dict, keys: tuple[str, ...]) -> str:
    for key in keys:
        found = value.get(key)
        if isinstance(found, str) and found:
            return found
    return ""


def _patch_text(tool_input: Any) -> str:
    if isinstance(tool_input, str):
        return tool_input
    if isinstance(tool_input, dict):
        return _first_str(tool_input, PATCH_KEYS)
    return ""


def _program_calls(base: str, tool_input: Any) -> tuple[tuple[str, Any], ...]:
    """The calls a code-mode tool's program makes (`compress.vocab.codemode.nested_calls`); ()
    for any other tool (by `base_name`) and for a program that calls no tool ctxmill can name."""
    return nested_calls(tool_input) if base in CODE_MODE_TOOLS else ()
