"""ctxmill.anthropic_memory driven the way an agent drives it: a scripted model answers through the
SDK's own tool runner (no network), and the runner executes our tool and sends back its results."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import anthropic
import pytest
from anthropic.lib.tools import ToolError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from proxy_helpers import _sdk_httpx

from ctxmill.anthropic_memory import VIEW_CHARS, AsyncCtxmillMemoryTool, CtxmillMemoryTool, Limits
from memory import api
from memory.config import MemoryConfig
from memory.files import ROOT, canonical
from memory.markdown import normalize_text

REPO = Path(__file__).resolve().parents[2]
JIEBA_CACHE = Path(os.environ.get("CTXMILL_TEST_CACHE", "/tmp/ctxmill-test-cache"))
HX = _sdk_httpx(anthropic)
MODEL = "claude-test-model"  # any name: the scripted model answers


def config(root: Path) -> MemoryConfig:
    return MemoryConfig(project_home=root / "proj" / ".ctxmill", global_home=root / "global", cache_dir=JIEBA_CACHE)


@pytest.fixture
def cfg(tmp_path) -> MemoryConfig:
    return config(tmp_path)


def scripted_model(turns: list[list[dict]]):
    """A Messages endpoint that answers request i with the tool calls of turns[i] (then "done"),
    and the list of request bodies it received."""
    bodies: list[dict] = []

    def reply(request) -> object:
        bodies.append(json.loads(request.content))
        i = len(bodies) - 1
        content = [{"type": "tool_use", "id": f"toolu_{i}_{j}", "name": "memory", "input": call}
                   for j, call in enumerate(turns[i])] if i < len(turns) else [{"type": "text", "text": "done"}]
        return HX.Response(200, json={
            "id": f"msg_{i}", "type": "message", "role": "assistant", "model": MODEL, "content": content,
            "stop_reason": "tool_use" if i < len(turns) else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}})

    return reply, bodies


def results_of(bodies: list[dict]) -> list[list[dict]]:
    """The tool_result blocks the runner sent after each turn."""
    return [body["messages"][-1]["content"] for body in bodies[1:]]


def run_agent(tool, turns: list[list[dict]]) -> list[list[dict]]:
    reply, bodies = scripted_model(turns)
    client = anthropic.Anthropic(api_key="test", max_retries=0,
                                 http_client=anthropic.DefaultHttpxClient(transport=HX.MockTransport(reply)))
    runner = client.beta.messages.tool_runner(model=MODEL, max_tokens=256, tools=[tool],
                                              messages=[{"role": "user", "content": "Work on the task."}])
    assert runner.until_done().content[0].text == "done"
    assert bodies[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    return results_of(bodies)


def one(tool, call: dict) -> dict:
    [[result]] = run_agent(tool, [[call]])
    return result


def ok(result: dict) -> str:
    assert not result.get("is_error"), result
    return result["content"]


def error(result: dict) -> str:
    assert result.get("is_error") is True, result
    assert isinstance(result["content"], str) and not result["content"].startswith("ToolError(")
    return result["content"]


def test_a_session_through_the_sdk_runner(cfg):
    tool = CtxmillMemoryTool(cfg)
    turns = [
        [{"command": "view", "path": "/memories"}],
        [{"command": "create", "path": "/memories/progress.md", "file_text": "# Progress\n- parser: done\n- index: todo\n"},
         {"command": "create", "path": "/memories/notes/db.md", "file_text": "Staging DB is read-only."}],
        [{"command": "view", "path": "/memories"}, {"command": "view", "path": "/memories/progress.md"},
         {"command": "view", "path": "/memories/progress.md", "view_range": [2, -1]}],
        [{"command": "str_replace", "path": "/memories/progress.md", "old_str": "index: todo", "new_str": "index: done"},
         {"command": "str_replace", "path": "/memories/progress.md", "old_str": ": done", "new_str": "!"},
         {"command": "str_replace", "path": "/memories/progress.md", "old_str": "missing", "new_str": "x"},
         {"command": "insert", "path": "/memories/progress.md", "insert_line": 1, "insert_text": "Started Monday.\n"},
         {"command": "insert", "path": "/memories/progress.md", "insert_line": 9, "insert_text": "x"}],
        [{"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/infra"},
         {"command": "rename", "old_path": "/memories/nope.md", "new_path": "/memories/x.md"},
         {"command": "delete", "path": "/memories/progress.md"}, {"command": "delete", "path": "/memories/progress.md"},
         {"command": "view", "path": "/memories/../../etc/passwd"}, {"command": "delete", "path": "/memories"}],
    ]
    empty, created, viewed, edited, moved = run_agent(tool, turns)
    assert ok(empty[0]) == ("Here're the files and directories up to 2 levels deep in /memories, excluding hidden items "
                            "and node_modules:\n0B\t/memories")
    assert [ok(r) for r in created] == ["File created successfully at: /memories/progress.md",
                                        "File created successfully at: /memories/notes/db.md"]
    assert ok(viewed[0]).split("\n")[1:] == ["63B\t/memories", "24B\t/memories/notes/", "24B\t/memories/notes/db.md",
                                             "39B\t/memories/progress.md"]
    assert ok(viewed[1]) == ("Here's the content of /memories/progress.md with line numbers:\n"
                             "     1\t# Progress\n     2\t- parser: done\n     3\t- index: todo")
    assert ok(viewed[2]).split("\n")[1:] == ["     2\t- parser: done", "     3\t- index: todo"]
    assert ok(edited[0]).endswith("\n     1\t# Progress\n     2\t- parser: done\n     3\t- index: done")
    assert error(edited[1]) == ("No replacement was performed. Multiple occurrences of old_str `: done` in lines: 2, 3. "
                                "Please ensure it is unique")
    assert "did not appear verbatim in /memories/progress.md" in error(edited[2])
    assert ok(edited[3]) == "The file /memories/progress.md has been edited."
    assert error(edited[4]) == ("Invalid `insert_line` parameter: 9. It should be within the range of lines of the "
                                "file: [0, 4]")
    assert ok(moved[0]) == "Successfully renamed /memories/notes to /memories/infra"
    assert error(moved[1]) == "The path /memories/nope.md does not exist"
    assert ok(moved[2]) == "Successfully deleted /memories/progress.md"
    assert error(moved[3]) == "The path /memories/progress.md does not exist"
    assert "would escape /memories" in error(moved[4])
    assert error(moved[5]) == "Cannot delete the /memories directory itself"
    [hit] = api.search(cfg, "staging read-only", limit=1)  # what memory_search and the hooks see
    assert hit.entry.text == "/memories/infra/db.md\nStaging DB is read-only."


def test_async_runner(cfg):
    reply, bodies = scripted_model([[{"command": "create", "path": "/memories/a.md", "file_text": "alpha\nbeta"}],
                                    [{"command": "str_replace", "path": "/memories/a.md", "old_str": "beta"},
                                     {"command": "view", "path": "/memories/a.md"}]])

    async def main():
        http = anthropic.DefaultAsyncHttpxClient(transport=HX.MockTransport(reply))
        client = anthropic.AsyncAnthropic(api_key="test", max_retries=0, http_client=http)
        runner = client.beta.messages.tool_runner(model=MODEL, max_tokens=256,
                                                  tools=[AsyncCtxmillMemoryTool(cfg)],
                                                  messages=[{"role": "user", "content": "go"}])
        return await runner.until_done()

    assert asyncio.run(main()).content[0].text == "done"
    created, (replaced, viewed) = results_of(bodies)
    assert ok(created[0]) == "File created successfully at: /memories/a.md"
    assert ok(replaced).startswith("The memory file has been edited.")  # new_str left out: old_str is deleted
    assert ok(viewed).split("\n")[1:] == ["     1\talpha"]  # trailing blank lines are not stored


def test_create_overwrites_a_file_but_not_a_directory(cfg):
    tool = CtxmillMemoryTool(cfg)
    tool.call({"command": "create", "path": "/memories/d/a.md", "file_text": "one"})
    assert tool.call({"command": "create", "path": "/memories/d/a.md", "file_text": "two"}) == \
        "File /memories/d/a.md overwritten successfully."
    assert tool.files.read().content("/memories/d/a.md") == "two"
    for path in ("/memories/d", "/memories"):
        with pytest.raises(ToolError, match="is a directory"):
            tool.call({"command": "create", "path": path, "file_text": "x"})
    with pytest.raises(ToolError, match="is a file"):
        tool.call({"command": "create", "path": "/memories/d/a.md/b.md", "file_text": "x"})


def test_directory_listing_goes_two_levels_and_hides_dot_names_and_node_modules(cfg):
    tool = CtxmillMemoryTool(cfg)
    for path in ("a/b/c/deep.md", "a/b/x.md", "a/top.md", ".hidden.md", "node_modules/m.md", "k.md", "a/.h/y.md"):
        tool.call({"command": "create", "path": f"/memories/{path}", "file_text": "x" * 1536})
    listing = tool.call({"command": "view", "path": "/memories/"}).split("\n")[1:]
    assert listing == ["10.5K\t/memories", "6K\t/memories/a/", "3K\t/memories/a/b/", "1.5K\t/memories/a/top.md",
                       "1.5K\t/memories/k.md"]
    assert tool.call({"command": "view", "path": "/memories/a/b"}).split("\n")[1:] == [
        "3K\t/memories/a/b", "1.5K\t/memories/a/b/c/", "1.5K\t/memories/a/b/c/deep.md", "1.5K\t/memories/a/b/x.md"]
    with pytest.raises(ToolError, match="does not exist"):
        tool.call({"command": "view", "path": "/memories/zz"})


def test_edits_of_a_directory_say_it_does_not_exist(cfg):
    tool = CtxmillMemoryTool(cfg)
    tool.call({"command": "create", "path": "/memories/d/a.md", "file_text": "one"})
    for call in ({"command": "str_replace", "path": "/memories/d", "old_str": "one", "new_str": "two"},
                 {"command": "insert", "path": "/memories/d", "insert_line": 0, "insert_text": "x"}):
        with pytest.raises(ToolError, match="The path /memories/d does not exist"):
            tool.call(call)


def test_long_files_are_viewed_in_pages(cfg):
    tool = CtxmillMemoryTool(cfg)
    lines = [f"line {n:05d} " + "x" * 90 for n in range(1, 401)]
    tool.call({"command": "create", "path": "/memories/long.md", "file_text": "\n".join(lines)})
    first = tool.call({"command": "view", "path": "/memories/long.md"})
    assert len(first) <= VIEW_CHARS + 200
    last_shown = int(first.split("\n")[-2].split("\t")[0])
    assert first.endswith(f"view_range [{last_shown + 1}, -1] shows the rest]")
    rest = tool.call({"command": "view", "path": "/memories/long.md", "view_range": [last_shown + 1, -1]})
    assert rest.split("\n")[1].endswith(lines[last_shown])
    for bad in ([0, 3], [5, 2], [1], [1, 2, 3], "1:3", [401, -1]):
        with pytest.raises(ToolError, match="Invalid `view_range`"):
            tool.call({"command": "view", "path": "/memories/long.md", "view_range": bad})


def test_oversized_writes_are_refused_and_change_nothing(cfg):
    tool = CtxmillMemoryTool(cfg, limits=Limits(file_bytes=1000, total_bytes=1500))
    tool.call({"command": "create", "path": "/memories/a.md", "file_text": "a" * 897 + "END"})
    memory = cfg.project_home / api.MEMORY_FILE
    before = memory.read_bytes()
    for call in ({"command": "create", "path": "/memories/b.md", "file_text": "b" * 1001},
                 {"command": "create", "path": "/memories/b.md", "file_text": "b" * 700},
                 {"command": "str_replace", "path": "/memories/a.md", "old_str": "END", "new_str": "a" * 200},
                 {"command": "insert", "path": "/memories/a.md", "insert_line": 1, "insert_text": "a" * 200}):
        message = error(one(tool, call))
        assert "nothing was written" in message and "bytes, more than the" in message
        assert memory.read_bytes() == before


def test_secrets_never_reach_the_file(cfg):
    tool = CtxmillMemoryTool(cfg)
    token = "sk-ant-api03-" + "Zx9" * 30
    result = tool.call({"command": "create", "path": "/memories/keys.md", "file_text": f"key: {token}"})
    assert result.endswith("before it was stored.")
    assert token not in (cfg.project_home / api.MEMORY_FILE).read_text("utf-8")
    with pytest.raises(ToolError, match="secret"):
        tool.call({"command": "rename", "old_path": "/memories/keys.md", "new_path": f"/memories/{token}"})


@pytest.mark.parametrize("call", [{"command": "create", "path": "/memories/x.md"},
                                  {"command": "create", "path": 7, "file_text": "x"},
                                  {"command": "insert", "path": "/memories/x.md", "insert_line": "end", "insert_text": "x"},
                                  {"command": "str_replace", "path": "/memories/x.md", "old_str": "", "new_str": "x"},
                                  {"command": "rename", "old_path": "/memories", "new_path": "/memories/y"}])
def test_malformed_calls_get_an_error_result(cfg, call):
    tool = CtxmillMemoryTool(cfg)
    tool.call({"command": "create", "path": "/memories/x.md", "file_text": "x"})
    error(one(tool, call))


def test_clear_all_memory_keeps_other_entries(cfg):
    api.store(cfg, "constraint", "Never push to main directly")
    tool = CtxmillMemoryTool(cfg)
    tool.call({"command": "create", "path": "/memories/a.md", "file_text": "x"})
    assert tool.clear_all_memory() == "All memory cleared"
    assert [e.text for e in api.list_entries(cfg)] == ["Never push to main directly"]


PIECES = ["/memories", "/", "..", ".", "%2e%2e", "%2f", "\\", "．．", "\u2025", "\uff0f", "\x00", "~", "etc",
          "passwd", "a.md", "/memoriesX", "//", " ", "\u202e"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=3), max_size=10).map("".join), st.sampled_from(["create", "rename"]))
def test_no_call_writes_outside_the_memory_file(raw, command):
    with tempfile.TemporaryDirectory() as root:
        root = Path(root)
        sentinel = root / "etc" / "passwd"
        sentinel.parent.mkdir()
        sentinel.write_text("root:x:0:0")
        tool = CtxmillMemoryTool(config(root))
        tool.call({"command": "create", "path": "/memories/seed.md", "file_text": "seed"})
        call = {"command": "create", "path": raw, "file_text": "payload"} if command == "create" else \
            {"command": "rename", "old_path": "/memories/seed.md", "new_path": raw}
        try:
            tool.call(call)
            accepted = True
        except ToolError:
            accepted = False
        written = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        assert written == ["etc/passwd", "proj/.ctxmill/.MEMORY.md.lock", "proj/.ctxmill/MEMORY.md"]
        assert sentinel.read_text() == "root:x:0:0"
        paths = set(tool.files.read().entries)
        assert all(path.startswith(ROOT + "/") for path in paths)
        if accepted:
            assert canonical(raw) in paths


lines_text = st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=30), max_size=8)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines_text, lines_text, st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=20))
def test_create_view_replace_view_round_trip(before, after, new):
    """What was created is what a view shows; a replacement changes exactly the replaced text
    (storage drops trailing white space and trailing blank lines)."""
    marker = "MARKER-7f3a"
    text = normalize_text("\n".join(before + [marker] + after))
    new = normalize_text(new).replace("\n", " ")
    with tempfile.TemporaryDirectory() as root:
        tool = CtxmillMemoryTool(config(Path(root)))
        tool.call({"command": "create", "path": "/memories/r.md", "file_text": text})
        assert view_lines(tool) == tool.files.redact(text).split("\n")
        if text.count(marker) != 1:
            return
        tool.call({"command": "str_replace", "path": "/memories/r.md", "old_str": marker, "new_str": new})
        assert view_lines(tool) == tool.files.redact(text.replace(marker, new)).rstrip("\n").split("\n")


def view_lines(tool) -> list[str]:
    view = tool.call({"command": "view", "path": "/memories/r.md"})
    rows = view.split("\n")[1:]
    assert [int(row.split("\t", 1)[0]) for row in rows] == list(range(1, len(rows) + 1))
    return [row.split("\t", 1)[1] for row in rows]


def test_runtime_dependencies_do_not_include_the_sdk():
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    assert not any(dep.startswith("anthropic") for dep in project["dependencies"])
    assert project["optional-dependencies"]["anthropic"] == ["anthropic>=0.84"]
    code = ("import sys; sys.modules['anthropic'] = None\n"
            "import ctxmill.cli, ctxmill.hooks, ctxmill.mcp_server, memory.files, memory.dream\n"
            "try:\n    import ctxmill.anthropic_memory\nexcept ImportError as exc:\n    print(exc)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert "pip install 'ctxmill[anthropic]'" in out


def test_default_tool_uses_the_project_settings(tmp_path, monkeypatch):
    """No config given: the project home the CLI would use, its [security] patterns included."""
    home = tmp_path / "proj" / ".ctxmill"
    home.mkdir(parents=True)
    (home / "config.toml").write_text('[security]\nredact_extra = ["codename-[a-z]+"]\n', "utf-8")
    monkeypatch.setenv("CTXMILL_HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    tool = CtxmillMemoryTool()
    assert tool.call({"command": "create", "path": "/memories/p.md", "file_text": "Ship codename-falcon"}).endswith(
        "before it was stored.")
    assert "codename-falcon" not in (home / api.MEMORY_FILE).read_text("utf-8")
    assert tool.files.read().content("/memories/p.md").startswith("Ship [REDACTED:")
