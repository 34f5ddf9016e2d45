"""End to end: `ctxmill hook EVENT` and `ctxmill mcp` as subprocesses, install/uninstall round trips."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compress.formats.sessions import read_session
from compress.vocab.calls import touched_files
from compress.vocab.touches import CHANGES
from ctxmill.mcp_tools import TOOLS

REPO = Path(__file__).resolve().parents[1]


def _env(home: Path, **extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(home), "HOME": str(home.parent / "user"),
            "XDG_DATA_HOME": str(home.parent / "xdg"), **extra}


def _ctxmill(args, home: Path, stdin: str = "", cwd: Path | None = None):
    return subprocess.run([sys.executable, "-m", "ctxmill", *args], input=stdin, capture_output=True, text=True,
                          env=_env(home), cwd=cwd or home.parent, timeout=120)


def _event(name: str, transcript: Path, **fields) -> str:
    return json.dumps({"session_id": "sess-1", "transcript_path": str(transcript), "cwd": "/nowhere",
                       "hook_event_name": name, **fields})


@pytest.fixture
def project(tmp_path):
    home = tmp_path / ".ctxmill"
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "sess-1",
         "message": {"role": "user", "content": "Please fix the parser. We must keep Python 3.11 support."}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "sess-1",
         "message": {"id": "m1", "role": "assistant", "content": [
             {"type": "tool_use", "id": "t1", "name": "Edit",
              "input": {"file_path": "/src/parser.py", "old_string": "a", "new_string": "b"}}]}},
        {"type": "user", "uuid": "u2", "parentUuid": "a1", "sessionId": "sess-1",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}},
        {"type": "assistant", "uuid": "a2", "parentUuid": "u2", "sessionId": "sess-1",
         "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "Fixed. Next step: add tests."}]}},
    ]
    transcript.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return home, transcript


def _context(out: str, event: str) -> str:
    data = json.loads(out)
    assert set(data) == {"hookSpecificOutput"}
    assert data["hookSpecificOutput"]["hookEventName"] == event
    return data["hookSpecificOutput"]["additionalContext"]


def test_hook_events_follow_the_protocol(project):
    home, transcript = project
    assert _ctxmill(["memory", "store", "--type", "decision", "--pin", "Parser errors carry line numbers"], home).returncode == 0
    _ctxmill(["memory", "store", "--type", "gotcha", "The tokenizer chokes on tabs in the parser input"], home)

    for event in ("PreCompact", "SessionEnd", "Stop"):
        done = _ctxmill(["hook", event], home, _event(event, transcript, trigger="auto", reason="exit"))
        assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    checkpoint = (home / "checkpoint.md").read_text()
    assert "`/src/parser.py`" in checkpoint and (home / "sessions/sess-1/checkpoint.raw.json").exists()

    start = _ctxmill(["hook", "SessionStart"], home, _event("SessionStart", transcript, source="compact"))
    assert start.returncode == 0
    context = _context(start.stdout, "SessionStart")
    assert "Parser errors carry line numbers" in context and "deep_expand" in context
    assert "Please fix the parser" in context and "add tests" in context  # the checkpoint summary

    prompt = _ctxmill(["hook", "UserPromptSubmit"], home,
                      _event("UserPromptSubmit", transcript, prompt="why does the tokenizer choke on tabs?"))
    assert prompt.returncode == 0
    assert "tokenizer chokes on tabs" in _context(prompt.stdout, "UserPromptSubmit")
    unrelated = _ctxmill(["hook", "UserPromptSubmit"], home,
                         _event("UserPromptSubmit", transcript, prompt="what is the weather like in Lisbon"))
    assert unrelated.returncode == 0 and unrelated.stdout == ""


def test_pre_tool_use_denies_only_inputs_that_carry_a_ctxmill_placeholder(project):
    home, transcript = project
    note = '<<ctxmill: 40-line body of src/app.py stored; written at turn 3, no later change to the file' \
           ' · deep_expand("0123456789abcdef0123456789abcdef")>>'
    calls = {
        "Write": {"file_path": "/src/app.py", "content": note},
        "Edit": {"file_path": "/src/app.py", "old_string": "x = 1", "new_string": "x = 2\n" + note},
        "Bash": {"command": f"cat > src/app.py <<'EOF'\n{note}\nEOF"},
    }
    for tool, tool_input in calls.items():
        done = _ctxmill(["hook", "PreToolUse"], home, _event("PreToolUse", transcript, tool_name=tool, tool_input=tool_input))
        assert done.returncode == 0
        decision = json.loads(done.stdout)["hookSpecificOutput"]
        assert decision["hookEventName"] == "PreToolUse" and decision["permissionDecision"] == "deny"
        assert 'deep_expand("0123456789abcdef0123456789abcdef")' in decision["permissionDecisionReason"]
    talk = {"file_path": "/docs/ctxmill.md", "content": "Markers look like [ctxmill: …] and name a deep_expand key."}
    for tool_input in (talk, {"command": "pytest -q"}, {"file_path": "/src/app.py", "content": "x = 1\n"}):
        done = _ctxmill(["hook", "PreToolUse"], home, _event("PreToolUse", transcript, tool_name="Write", tool_input=tool_input))
        assert (done.returncode, done.stdout) == (0, "")


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", json.dumps({"transcript_path": "/missing.jsonl"})])
def test_hooks_fail_open(project, stdin):
    home, _ = project
    for event in ("PreCompact", "UserPromptSubmit", "PreToolUse", "SessionEnd"):
        done = _ctxmill(["hook", event], home, stdin)
        assert (done.returncode, done.stdout) == (0, "")


@pytest.mark.corpus
def test_precompact_on_corpus_transcript_lists_the_edited_files(corpus, tmp_path):
    path = corpus / "transcripts" / "claude-code" / "Sarthib7__FundWise__claude-session.jsonl"
    if not path.exists():
        pytest.skip(f"{path.name} absent")
    expected = set()
    for msg in read_session(path).messages:
        for block in msg["content"] if isinstance(msg["content"], list) else []:
            if block.get("type") == "tool_use" and block.get("name") in ("Edit", "Write", "MultiEdit"):
                expected.add(block["input"]["file_path"])
    home = tmp_path / ".ctxmill"
    done = _ctxmill(["hook", "PreCompact"], home, _event("PreCompact", path, trigger="auto"))
    assert done.returncode == 0, done.stderr
    section = (home / "checkpoint.md").read_text().split("## Files changed")[1].split("\n## ")[0]
    listed = {line.split("`")[1] for line in section.splitlines() if line.startswith("- `")}
    # shell commands may change more files than the editor tools; every edited file must be there
    assert expected and expected <= listed
    shell_only = listed - expected
    for changed in shell_only:
        assert any(touch.path == changed and touch.action in CHANGES
                   for msg in read_session(path).messages if isinstance(msg["content"], list)
                   for b in msg["content"] if b.get("type") == "tool_use"
                   for touch in touched_files(b["name"], b["input"]))


def test_mcp_server_end_to_end(tmp_path):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from ccr.store import CCRStore

    home = tmp_path / ".ctxmill"
    original = "\n".join(f"line {i}: value={i * i}" for i in range(1, 200))
    with CCRStore(home / "ccr") as store:
        key = store.put(original, "test output")

    async def talk():
        params = StdioServerParameters(command=sys.executable, args=["-m", "ctxmill", "mcp"], env=_env(home),
                                       cwd=str(tmp_path))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = [tool.name for tool in (await session.list_tools()).tools]
            assert (
                sorted(names)
                == sorted(TOOLS)
                == sorted(
                    {
                        "deep_expand",
                        "memory_search",
                        "memory_store",
                        "memory_forget",
                        "checkpoint",
                        "history_search",
                        "history_get",
                    }
                )
            )
            stored = await session.call_tool("memory_store", {"type": "decision", "text": "Use BM25 for memory search",
                                                              "tags": ["search"]})
            assert not stored.is_error
            entry_id = json.loads(stored.content[0].text)["id"]
            found = await session.call_tool("memory_search", {"query": "bm25 search", "limit": 3})
            assert not found.is_error and entry_id in found.content[0].text
            whole = await session.call_tool("deep_expand", {"key": key})
            assert not whole.is_error and whole.content[0].text == original
            part = await session.call_tool("deep_expand", {"key": key, "lines": "10:11"})
            assert part.content[0].text.splitlines()[0].endswith("line 10: value=100")
            for name, args in (("deep_expand", {"key": "0" * 32}), ("memory_store", {"type": "bogus", "text": "x"}),
                               ("memory_forget", {"id": "m-00000000"}), ("checkpoint", {})):
                failed = await session.call_tool(name, args)
                assert failed.is_error, name
            forgot = await session.call_tool("memory_forget", {"id": entry_id})
            assert not forgot.is_error

    asyncio.run(talk())


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("host", ["claude-code", "opencode"])
def test_install_is_idempotent_and_uninstall_restores(tmp_path, host):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / ".claude").mkdir()
    settings = {"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo mine"}]}]}}
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))
    (root / "opencode.json").write_text(json.dumps({"theme": "dark"}))
    before = _tree(root)
    env = _env(tmp_path / "unused")
    del env["CTXMILL_HOME"]
    run = lambda *a: subprocess.run([sys.executable, "-m", "ctxmill", *a], cwd=root, env=env, capture_output=True,  # noqa: E731
                                    text=True, timeout=60)
    assert run("install", host, "--project").returncode == 0
    once = _tree(root)
    assert run("install", host, "--project").returncode == 0
    assert _tree(root) == once
    if host == "claude-code":
        hooks = json.loads((root / ".claude/settings.json").read_text())["hooks"]
        assert all(sum("hook " + e in h["command"] for g in hooks[e] for h in g["hooks"]) == 1 for e in
                   ("SessionStart", "UserPromptSubmit", "PreToolUse", "PreCompact", "SessionEnd", "Stop"))
        assert [g.get("matcher") for g in hooks["PreToolUse"]] == ["Write|Edit|MultiEdit|NotebookEdit|Bash"]
        assert "echo mine" in json.dumps(hooks["Stop"])
        assert "ctxmill" in json.loads((root / ".mcp.json").read_text())["mcpServers"]
        assert run("doctor").stdout.startswith("ok       Claude Code (project scope): files")
    else:
        assert json.loads((root / "opencode.json").read_text())["mcp"]["ctxmill"]["type"] == "local"
        assert (root / ".opencode/plugins/ctxmill.js").exists() and (root / ".opencode/commands/dream.md").exists()
    assert run("uninstall", host, "--project").returncode == 0
    after = {k: v for k, v in _tree(root).items() if not k.endswith(".ctxmill.bak") and not k.startswith(".ctxmill/")}
    assert {k: json.loads(v) if k.endswith(".json") else v for k, v in after.items()} == \
           {k: json.loads(v) if k.endswith(".json") else v for k, v in before.items()}


def test_prompt_relevance_does_not_depend_on_memory_size():
    from ctxmill.hooks import relevant

    assert relevant({"sqlite", "ccr", "choos"}, {"use", "sqlite", "ccr", "store", "atom", "batch"})
    assert not relevant({"button", "set", "page"}, {"use", "sqlite", "ccr", "store"})
    assert not relevant({"sqlite", "ccr", "store", "button", "page", "layout", "color"}, {"sqlite"})
    assert relevant({"sqlite"}, {"sqlite", "wal"})  # a one-word prompt needs its one word


def test_the_first_session_in_a_fresh_repository_leaves_only_the_gitignore_for_git(
    project, tmp_path
):
    _, transcript = project
    repo = tmp_path / "fresh"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {
        k: v for k, v in _env(tmp_path / "user-home" / ".ctxmill").items() if k != "CTXMILL_HOME"
    }
    for name in ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"):
        event = {
            **json.loads(
                _event(name, transcript, source="startup", prompt="fix the parser", reason="exit")
            ),
            "cwd": str(repo),
        }
        done = subprocess.run(
            [sys.executable, "-m", "ctxmill", "hook", name],
            input=json.dumps(event),
            text=True,
            capture_output=True,
            env=env,
            cwd=repo,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    assert (repo / ".ctxmill" / "sessions" / "sess-1" / "checkpoint.raw.json").exists()
    status = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".ctxmill/.gitignore" in status.split()
    assert set(status.split()) - {"??"} <= {
        ".ctxmill/.gitignore",
        ".ctxmill/MEMORY.md",
        ".ctxmill/notes.md",
    }, status


def test_mcp_help_names_exactly_the_servers_tools(tmp_path):
    from ctxmill.mcp_server import build_server
    from ctxmill.settings import Settings

    served = asyncio.run(build_server(Settings.load(tmp_path / ".ctxmill")).list_tools())
    assert sorted(t.name for t in served) == sorted(TOOLS)
    for args in (["--help"], ["mcp", "--help"]):
        shown = subprocess.run(
            [sys.executable, "-m", "ctxmill", *args],
            capture_output=True,
            text=True,
            env=_env(tmp_path / ".ctxmill"),
            timeout=60,
        ).stdout
        assert ", ".join(TOOLS) in " ".join(shown.split()), shown
