"""One table of how ctxmill classifies a call, per client: the kind of its output
(`compress.vocab.tools.tool_kind`, for a poll the command it polls, `compress.vocab.polls`) and the
files it touches (`compress.vocab.calls.touched_files`). Every stage that decides by kind or by file
(decide_on_arrival, trim_outputs, supersede_inputs) reads these two answers and nothing else.

A command whose output is the text of files it reads (`compress.vocab.commands.shows_files`) is a
read of each, in every client, beside parts that only look (`ls d && head -50 package.json`); one
that also runs something (a build, a test, a script, a grep of the lines) is command output."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compress.formats.requests import from_provider
from compress.model import TOOL_USE
from compress.vocab.calls import touched_files
from compress.vocab.polls import polled_calls, resolved
from compress.vocab.tools import ToolKind, tool_kind
from compress.vocab.touches import CREATE, DELETE, EDIT, READ, WRITE, FileTouch
from tests.stagekit import openai

PATCH = ("*** Begin Patch\n*** Update File: src/app.py\n@@\n-    return a - b\n+    return a + b\n"
         "*** Add File: src/new.py\n+x = 1\n*** End Patch")
TWO_FILES = "sed -n '1,200p' src/a.py; echo ---; sed -n '1,200p' src/b.py"
FUNDWISE = ('ls /r/scripts/ 2>&1 | head -20 && echo "---PACKAGE---" && head -50 /r/package.json')
"""A Claude Code `Bash` call of the corpus (Sarthib7 FundWise): a listing, then a file's first lines."""

K = ToolKind
TABLE = [
    # Claude Code
    ("claude-code", "Read", {"file_path": "/r/a.py", "offset": 10, "limit": 20}, K.FILE_READ, [("/r/a.py", READ)]),
    ("claude-code", "Bash", {"command": "cat src/a.py"}, K.FILE_READ, [("src/a.py", READ)]),
    ("claude-code", "Bash", {"command": TWO_FILES}, K.FILE_READ, [("src/a.py", READ), ("src/b.py", READ)]),
    ("claude-code", "Bash", {"command": FUNDWISE}, K.FILE_READ, [("/r/package.json", READ)]),
    ("claude-code", "Bash", {"command": 'cd /r && cat src/a.vue && echo "---" && cat src/b.vue'}, K.FILE_READ,
     [("/r/src/a.vue", READ), ("/r/src/b.vue", READ)]),
    ("claude-code", "Bash", {"command": "cat .ruby-version; echo ---; cat config/deploy.yml 2>/dev/null | head -40"},
     K.FILE_READ, [(".ruby-version", READ), ("config/deploy.yml", READ)]),
    ("claude-code", "Bash", {"command": "batcat -p src/a.py | cat -n"}, K.FILE_READ, [("src/a.py", READ)]),
    ("claude-code", "Bash", {"command": "awk 'NR>=10 && NR<=20' src/a.py"}, K.FILE_READ, [("src/a.py", READ)]),
    ("claude-code", "Bash", {"command": "sed 40q src/a.py"}, K.FILE_READ, [("src/a.py", READ)]),
    ("claude-code", "Bash", {"command": "npm test"}, K.COMMAND, []),
    ("claude-code", "Bash", {"command": "npm test && cat coverage/summary.txt"}, K.COMMAND,
     [("coverage/summary.txt", READ)]),
    ("claude-code", "Bash", {"command": "rm app/x.erb; cat test/x_test.rb"}, K.COMMAND,
     [("app/x.erb", DELETE), ("test/x_test.rb", READ)]),
    ("claude-code", "Bash", {"command": 'head -20 src/t.tsx | grep "import.*Tooltip"'}, K.COMMAND, [("src/t.tsx", READ)]),
    ("claude-code", "Bash", {"command": "cat state.json | python3 -c 'import json,sys; print(1)'"}, K.COMMAND,
     [("state.json", READ)]),
    ("claude-code", "Bash", {"command": "sleep 5 && tail -f /tmp/run.output"}, K.COMMAND, [("/tmp/run.output", READ)]),
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
    ("codex", "exec_command", {"cmd": "ls -la src/health.js && nl -ba src/health.js | sed -n '1,80p'", "workdir": "/repo"},
     K.FILE_READ, [("/repo/src/health.js", READ)]),
    ("codex", "shell", {"command": ["bash", "-lc", "test -f ~/.zshrc && tail -n 40 ~/.zshrc || true"]}, K.FILE_READ,
     [("~/.zshrc", READ)]),
    ("codex", "shell_command", {"command": "Get-Content src\\a.vue -TotalCount 80; Get-Content src\\b.vue"},
     K.FILE_READ, [("src/a.vue", READ), ("src/b.vue", READ)]),
    ("codex", "exec_command", {"cmd": "node --check src/server.js && nl -ba src/server.js | sed -n '89,170p'",
                               "workdir": "/repo"}, K.COMMAND, [("/repo/src/server.js", READ)]),
    ("codex", "exec_command", {"cmd": "cargo build", "workdir": "/repo"}, K.COMMAND, []),
    ("codex", "apply_patch", PATCH, K.OTHER, [("src/app.py", EDIT), ("src/new.py", CREATE)]),
    ("codex", "exec", {"input": f"await tools.apply_patch(`{PATCH}`);"}, K.OTHER, [("src/app.py", EDIT), ("src/new.py", CREATE)]),
    ("codex", "exec", {"input": "const r = await tools.exec_command({cmd: \"sed -n '1,200p' src/app.ts\", workdir: '/repo'});\n"
                                "text(r.output);"}, K.FILE_READ, [("/repo/src/app.ts", READ)]),
    # OpenCode
    ("opencode", "read", {"filePath": "/r/a.ts", "offset": 10, "limit": 50}, K.FILE_READ, [("/r/a.ts", READ)]),
    ("opencode", "bash", {"command": "cat a.ts"}, K.FILE_READ, [("a.ts", READ)]),
    ("opencode", "bash", {"command": 'cat src/a.ts && echo "---" && cat src/b.ts'}, K.FILE_READ,
     [("src/a.ts", READ), ("src/b.ts", READ)]),
    ("opencode", "bash", {"command": "bun test"}, K.COMMAND, []),
    ("opencode", "bash", {"command": "cd /r/backend && source venv/bin/activate && uvicorn main:app"}, K.COMMAND,
     [("/r/backend/venv/bin/activate", READ)]),
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


def test_codex_a_poll_carrying_a_compound_commands_two_files_is_a_read_of_both():
    started = "Chunk ID: 9c01\nWall time: 1.0 seconds\nProcess running with session ID 3\nOutput:\n"
    body = openai([("exec_command", {"cmd": TWO_FILES, "workdir": "/repo"}, started),
                   ("write_stdin", {"session_id": 3, "chars": ""}, "Process exited with code 0\nOutput:\nx = 1\n")])
    messages = from_provider(body).messages
    poll = [b for m in resolved(messages, polled_calls(messages)) for b in m.blocks if b.kind == TOOL_USE][1]
    assert tool_kind(poll.tool_name, poll.input) is K.FILE_READ
    assert touched_files(poll.tool_name, poll.input) == [FileTouch("/repo/src/a.py", READ), FileTouch("/repo/src/b.py", READ)]


FILES = st.sampled_from(["src/app.py", "package.json", "lib/a b.ts", "config/deploy.yml"])
N = st.integers(1, 400)
PRINTERS = [lambda f, a, b: f"cat '{f}'", lambda f, a, b: f"head -{a} '{f}'", lambda f, a, b: f"tail -n {a} '{f}'",
            lambda f, a, b: f"sed -n '{a},{a + b}p' '{f}'", lambda f, a, b: f"nl -ba '{f}' | sed -n '{a},{a + b}p'",
            lambda f, a, b: f"cat -n '{f}' | head -{a}", lambda f, a, b: f"awk 'NR>={a} && NR<={a + b}' '{f}'",
            lambda f, a, b: f"bat -p '{f}' 2>/dev/null"]
LOOKS = ["ls src/", "echo ---", "pwd", "git status --short", "test -f docs/x.md", "wc -l docs/x.md"]
RUNS = ["npm test", "make", "python3 run.py", "cat docs/x.md | grep def"]
PART = st.one_of(st.tuples(st.just("print"), st.sampled_from(PRINTERS), FILES, N, N),
                 st.tuples(st.just("look"), st.sampled_from(LOOKS)), st.tuples(st.just("run"), st.sampled_from(RUNS)))


@given(st.lists(PART, min_size=1, max_size=5), st.lists(st.sampled_from([" && ", "; ", "\n", " || "]), min_size=4,
                                                        max_size=4), st.booleans(), st.sampled_from(["Bash", "bash"]))
def test_a_command_is_a_read_exactly_when_it_prints_files_and_runs_nothing(parts, separators, cd, name):
    texts = [part[1](*part[2:]) if part[0] == "print" else part[1] for part in parts]
    command = (("cd /r && " if cd else "") + "".join(
        text + (separators[i] if i < len(texts) - 1 else "") for i, text in enumerate(texts)))
    tool_input = {"command": command}
    before = copy.deepcopy(tool_input)
    printed = [part[2] for part in parts if part[0] == "print"]
    reads = printed and not any(part[0] == "run" for part in parts)
    assert (tool_kind(name, tool_input) is K.FILE_READ) == bool(reads)
    read_paths = [t.path for t in touched_files(name, tool_input) if t.action == READ]
    assert [p for p in read_paths if p.removeprefix("/r/") in printed] == [("/r/" if cd else "") + p for p in printed]
    assert tool_input == before  # classifying a call never changes it
