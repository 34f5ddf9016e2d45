"""Memory integrity: ids stay unique whatever a person pastes, an operation changes only the entry it
is aimed at, and bytes that are not UTF-8 neither break memory nor get lost."""

from __future__ import annotations

import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_helpers import JIEBA_CACHE

from memory import api
from memory.config import MemoryConfig
from memory.dream import DreamRefused, dream
from memory.files import MemoryFiles
from memory.markdown import decode, parse

PASTED = (
    "# Memory\n\n## Notes\n\n"
    "- Release on Fridays only after the smoke tests pass. <!-- m-1a2b3c4d 2025-06-01 -->\n"
    "- /memories/plan.md\n  # Plan\n  - parser first <!-- m-1a2b3c4d 2025-06-01 -->\n"
)


def memory_file(cfg: MemoryConfig):
    return cfg.project_home / api.MEMORY_FILE


def write(cfg: MemoryConfig, data: bytes) -> None:
    memory_file(cfg).parent.mkdir(parents=True, exist_ok=True)
    memory_file(cfg).write_bytes(data)


def ids(cfg: MemoryConfig) -> list[str]:
    return [e.id for e in api.list_entries(cfg, "project")]


def test_a_pasted_entry_gets_its_own_id_on_read_the_same_every_time_and_on_disk_after_a_write(cfg):
    write(cfg, PASTED.encode())
    first = ids(cfg)
    assert len(set(first)) == 2 and first[0] == "m-1a2b3c4d" and ids(cfg) == first
    api.store(cfg, "fact", "The staging database is read-only.")
    on_disk = [e.id for e in parse(memory_file(cfg).read_text()).entries()]
    assert on_disk[:2] == first and len(set(on_disk)) == 3
    assert "- parser first <!-- " + first[1] + " 2025-06-01 -->" in memory_file(cfg).read_text()


def test_memory_tool_edit_of_a_file_whose_id_was_pasted_leaves_the_other_entry_alone(cfg):
    write(cfg, PASTED.encode())
    with MemoryFiles(cfg).change() as files:
        files.write("/memories/plan.md", files.content("/memories/plan.md").replace("parser", "lexer"))
    text = memory_file(cfg).read_text()
    assert "- Release on Fridays only after the smoke tests pass. <!-- m-1a2b3c4d 2025-06-01 -->" in text
    assert "lexer first" in text and text.count("m-1a2b3c4d") == 1


def test_forget_removes_the_entry_named_not_its_pasted_twin(cfg):
    write(cfg, PASTED.encode())
    twin = ids(cfg)[1]
    api.forget(cfg, twin)
    assert [e.text for e in api.list_entries(cfg)] == ["Release on Fridays only after the smoke tests pass."]


def test_hand_written_twins_get_distinct_ids_and_forget_removes_one(cfg):
    write(cfg, b"## Facts\n\n- The CI runs on Debian.\n- The CI runs on Debian.\n")
    first, second = ids(cfg)
    assert first != second
    api.forget(cfg, second)
    assert ids(cfg) == [first]


def test_dream_folding_a_note_whose_id_memory_holds_keeps_both_ids_distinct(cfg):
    write(cfg, b"## Facts\n\n- The docs build with mkdocs material theme. <!-- m-00000001 2025-01-01 -->\n")
    (cfg.project_home / api.NOTES_FILE).write_bytes(
        b"## Notes\n\n- The release checklist lives in docs/release.md. <!-- m-00000001 2025-02-01 -->\n")
    dream(cfg)
    entries = parse(memory_file(cfg).read_text()).entries()
    assert len(entries) == 2 and len({e.id for e in entries}) == 2


BAD = b"## Facts\n\n- The build cache lives in /var/cache/\xff\xfebuild. <!-- m-0badbeef 2025-03-01 -->\n"


def test_invalid_utf8_lists_searches_stores_forgets_and_dreams_and_keeps_the_bytes(cfg):
    write(cfg, BAD)
    [entry] = api.list_entries(cfg)
    assert "\ufffd" in entry.text
    assert api.search(cfg, "build cache")[0].entry.id == "m-0badbeef"
    stored = api.store(cfg, "fact", "The deploy key rotates monthly.")
    assert b"/var/cache/\xff\xfebuild" in memory_file(cfg).read_bytes()
    api.forget(cfg, stored.id)
    assert memory_file(cfg).read_bytes() == BAD
    dream(cfg)
    assert memory_file(cfg).read_bytes() == BAD


def test_memory_tool_works_beside_an_undecodable_byte_and_keeps_it(cfg):
    write(cfg, BAD)
    with MemoryFiles(cfg).change() as files:
        files.write("/memories/todo.md", "- ship it")
    assert b"\xff\xfebuild" in memory_file(cfg).read_bytes()
    assert MemoryFiles(cfg).read().content("/memories/todo.md") == "- ship it"


# Operations a person or an agent performs, each aimed at one entry (or none).
TEXTS = ["Use uv for installs.", "Never push to main.", "The API answers in UTF-8.", "Tests need Redis 7.",
         "The docs build with mkdocs.", "/memories/plan.md\n- step one", "/memories/log.md\nstarted"]
operation = st.one_of(
    st.tuples(st.just("store"), st.sampled_from(TEXTS[:5]), st.booleans()),
    st.tuples(st.just("paste"), st.integers(0, 20)),  # copy an existing entry's line, id and all
    st.tuples(st.just("forget"), st.integers(0, 20)),
    st.tuples(st.just("file"), st.sampled_from(["/memories/plan.md", "/memories/log.md"]), st.sampled_from(TEXTS)),
    st.tuples(st.just("str_replace"), st.sampled_from(["/memories/plan.md", "/memories/log.md"]),
              st.sampled_from(["step", "started", "one"]), st.sampled_from(["stage", "begun", "two"])),
    st.tuples(st.just("dream")),
)


def _entries(cfg: MemoryConfig) -> dict[str, str]:
    path = memory_file(cfg)
    doc = parse(decode(path.read_bytes())) if path.exists() else parse("")
    return {e.id: e.text for e in doc.entries()}


def _apply(cfg: MemoryConfig, op: tuple) -> set[str] | None:
    """Run `op`; returns the ids it was aimed at (None: it may change any, as dream does)."""
    kind = op[0]
    entries = api.list_entries(cfg, "project")
    if kind == "store":
        return {api.store(cfg, "fact", op[1], notes=op[2]).id}
    if kind == "paste" and memory_file(cfg).exists():
        path = memory_file(cfg)
        raw = [b.raw for b in parse(decode(path.read_bytes())).blocks if b.entry is not None]
        if raw:
            path.write_bytes(path.read_bytes() + b"\n## Facts\n\n" + raw[op[1] % len(raw)].encode("utf-8", "surrogateescape"))
        return set()
    if kind == "forget" and entries:
        target = entries[op[1] % len(entries)].id
        api.forget(cfg, target)
        return {target}
    if kind == "file":
        with MemoryFiles(cfg).change() as files:
            files.write(op[1], op[2])
            return set(files.touched)
    if kind == "str_replace":  # the memory tool's command, as the SDK's runner calls it
        from types import SimpleNamespace

        from anthropic.lib.tools import ToolError

        from ctxmill.anthropic_memory import CtxmillMemoryTool

        before = {e.id for e in api.list_entries(cfg, "project")}
        try:
            CtxmillMemoryTool(cfg).str_replace(SimpleNamespace(command="str_replace", path=op[1], old_str=op[2],
                                                               new_str=op[3]))
        except ToolError:  # no such file, or the text is not in it: nothing changes
            return set()
        file_entry = next(e for e in api.list_entries(cfg, "project") if e.text.startswith(op[1] + "\n"))
        assert file_entry.id in before
        return {file_entry.id}
    if kind == "dream":
        try:
            dream(cfg)
        except DreamRefused:
            pass
        return None
    return set()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(operation, max_size=10))
def test_ids_unique_after_any_writes_and_no_operation_changes_an_entry_it_was_not_aimed_at(tmp_path, ops):
    root = tmp_path / "p"
    shutil.rmtree(root, ignore_errors=True)
    cfg = MemoryConfig(project_home=root / ".ctxmill", global_home=root / "g", cache_dir=JIEBA_CACHE)
    for op in ops:
        before = _entries(cfg)
        aimed = _apply(cfg, op)
        after = _entries(cfg)
        everywhere = [e.id for e in api.list_entries(cfg, "project") if e.file.endswith(api.MEMORY_FILE)]
        assert len(everywhere) == len(set(everywhere))
        if aimed is not None:
            for entry_id, text in before.items():
                if entry_id not in aimed:
                    assert after.get(entry_id) == text, (op, entry_id)


def test_mcp_memory_tools_answer_beside_an_undecodable_byte(tmp_path):
    """Through the official MCP client, as an agent calls them (they answered "Error executing tool")."""
    import asyncio
    import json
    import os
    import sys

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from memory_helpers import REPO

    home = tmp_path / ".ctxmill"
    home.mkdir()
    (home / api.MEMORY_FILE).write_bytes(BAD)
    env = {**os.environ, "PYTHONPATH": str(REPO), "CTXMILL_HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "xdg"),
           "HOME": str(tmp_path / "user")}
    results = {}

    async def talk() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "ctxmill", "mcp"], env=env, cwd=str(tmp_path))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await asyncio.wait_for(session.initialize(), 120)
            for name, args in (("memory_search", {"query": "build cache"}),
                               ("memory_store", {"type": "fact", "text": "The deploy key rotates monthly."}),
                               ("memory_forget", {"id": "m-0badbeef"})):
                results[name] = await asyncio.wait_for(session.call_tool(name, args), 120)

    asyncio.run(talk())
    assert not any(r.is_error for r in results.values()), {k: r.content for k, r in results.items()}
    assert json.loads(results["memory_search"].content[0].text)["id"] == "m-0badbeef"
    assert (home / api.MEMORY_FILE).read_bytes().count(b"\xff\xfe") == 0  # the entry holding them was forgotten
