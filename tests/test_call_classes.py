"""One table of how ctxmill classifies a call, per client: the kind of its output
(`compress.vocab.tools.tool_kind`, for a poll the command it polls, `compress.vocab.polls`) and the
files it touches (`compress.vocab.calls.touched_files`). Every stage that decides by kind or by file
(decide_on_arrival, trim_outputs, supersede_inputs) reads these two answers and nothing else.

A command that prints two files is command output whose call reads both files: the only-copy rule
(`compress.stagekit.shown_again`) counts what it shows, decide_on_arrival cuts it as output
(docs/replay-results.md: counting it as a read of each costs more for no line an agent copied)."""

from __future__ import annotations

import pytest

from compress.formats.requests import from_provider
from compress.model import TOOL_USE
from compress.vocab.calls import touched_files
from compress.vocab.polls import polled_calls, resolved
from compress.vocab.tools import ToolKind, tool_kind
from compress.vocab.touches import CREATE, EDIT, READ, WRITE, FileTouch
from tests.stagekit import openai

PATCH = ("*** Begin Patch\n*** Update File: src/app.py\n@@\n-    return a - b\n+    return a + b\n"
         "*** Add File: src/new.py\n+x = 1\n*** End Patch")
TWO_FILES = "sed -n '1,200p' src/a.py; echo ---; sed -n '1,200p' src/b.py"

K = ToolKind
TABLE = [
    # Claude Code
    ("claude-code", "Read", {"file_path": "/r/a.py", "offset": 10, "limit": 20}, K.FILE_READ, [("/r/a.py", READ)]),
    ("claude-code", "Bash", {"command": "cat src/a.py"}, K.FILE_READ, [("src/a.py", READ)]),
    ("claude-code", "Bash", {"command": TWO_FILES}, K.COMMAND, [("src/a.py", READ), ("src/b.py", READ)]),
    ("claude-code", "Bash", {"command": "npm test"}, K.COMMAND, []),
    ("claude-code", "Grep", {"pattern": "def add"}, K.SEARCH, []),
    ("claude-code", "Glob", {"pattern": "**/*.py"}, K.FILE_LIST, []),
    ("claude-code", "Task", {"prompt": "find the bug"}, K.SUBAGENT_WEB, []),
    ("claude-code", "WebFetch", {"url": "https://example.com"}, K.SUBAGENT_WEB, []),
    ("claude-code", "mcp__context7__get-library-docs", {"libraryID": "/x"}, K.OTHER, []),
    ("claude-code", "Write", {"file_path": "/r/a.py", "content": "x"}, K.OTHER, [("/r/a.py", WRITE)]),
    ("claude-code", "Edit", {"file_path": "/r/a.py", "old_string": "a", "new_string": "b"}, K.OTHER, [("/r/a.py", EDIT)]),
    # Codex
    ("codex", "exec_command", {"cmd": "sed -n '1,320p' src/app.py", "workdir": "/repo"}, K.FILE_READ,
     [("/repo/src/app.py", READ)]),
    ("codex", "shell", {"command": ["bash", "-lc", "cat src/app.py"], "workdir": "/repo"}, K.FILE_READ,
     [("/repo/src/app.py", READ)]),
    ("codex", "exec_command", {"cmd": "cargo build", "workdir": "/repo"}, K.COMMAND, []),
    ("codex", "apply_patch", PATCH, K.OTHER, [("src/app.py", EDIT), ("src/new.py", CREATE)]),
    ("codex", "exec", {"input": f"await tools.apply_patch(`{PATCH}`);"}, K.OTHER, [("src/app.py", EDIT), ("src/new.py", CREATE)]),
    ("codex", "exec", {"input": "const r = await tools.exec_command({cmd: \"sed -n '1,200p' src/app.ts\", workdir: '/repo'});\n"
                                "text(r.output);"}, K.FILE_READ, [("/repo/src/app.ts", READ)]),
    # OpenCode
    ("opencode", "read", {"filePath": "/r/a.ts", "offset": 10, "limit": 50}, K.FILE_READ, [("/r/a.ts", READ)]),
    ("opencode", "bash", {"command": "cat a.ts"}, K.FILE_READ, [("a.ts", READ)]),
    ("opencode", "bash", {"command": "bun test"}, K.COMMAND, []),
    ("opencode", "grep", {"pattern": "x"}, K.SEARCH, []),
    ("opencode", "glob", {"pattern": "**/*.ts"}, K.FILE_LIST, []),
    ("opencode", "edit", {"filePath": "/r/a.ts", "oldString": "a", "newString": "b"}, K.OTHER, [("/r/a.ts", EDIT)]),
    ("opencode", "write", {"filePath": "/r/b.ts", "content": "x"}, K.OTHER, [("/r/b.ts", WRITE)]),
    ("opencode", "webfetch", {"url": "https://example.com"}, K.SUBAGENT_WEB, []),
    ("opencode", "task", {"prompt": "x"}, K.SUBAGENT_WEB, []),
]


@pytest.mark.parametrize("client, name, tool_input, kind, touches", TABLE, ids=[f"{c}-{n}-{i}" for i, (c, n, *_) in enumerate(TABLE)])
def test_the_classification_table(client, name, tool_input, kind, touches):
    assert tool_kind(name, tool_input) is kind
    assert touched_files(name, tool_input) == [FileTouch(p, a) for p, a in touches]


def test_codex_a_write_stdin_poll_carrying_a_reads_output_is_a_read_of_its_file():
    started = "Chunk ID: 4f2a\nWall time: 1.0 seconds\nProcess running with session ID 7\nOutput:\n"
    body = openai([("exec_command", {"cmd": "sed -n '1,400p' src/app.py", "workdir": "/repo"}, started),
                   ("write_stdin", {"session_id": 7, "chars": ""}, "Process exited with code 0\nOutput:\nx = 1\n")])
    messages = from_provider(body).messages
    assert tool_kind("write_stdin", {"session_id": 7, "chars": ""}) is K.OTHER  # alone, a poll says nothing
    seen = resolved(messages, polled_calls(messages))
    poll = [b for m in seen for b in m.blocks if b.kind == TOOL_USE][1]
    assert tool_kind(poll.tool_name, poll.input) is K.FILE_READ
    assert touched_files(poll.tool_name, poll.input) == [FileTouch("/repo/src/app.py", READ)]
