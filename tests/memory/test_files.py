"""memory.files: the memory tool's /memories files as MEMORY.md entries — canonical paths, redacted
and locked writes, limits, searchability, and no harm to the entries around them."""

import posixpath
import threading
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory import api, dream
from memory.files import ROOT, FileError, Limits, MemoryFiles, canonical
from memory.markdown import normalize_text

# Pieces of hostile paths: traversal, encodings, look-alike dots and slashes, controls, prefixes.
PATH_PIECES = ["/memories", "/", "..", ".", "%2e", "%2E%2e", "%2f", "%252e", "%5c", "\\", "．", "\u2024", "\u2025",
               "\uff0f", "\u2100", "\x00", "\n", "\u202e", "\u200b", " ", "~", "etc", "passwd", "a", "b.md", "中文",
               "memories", "/memoriesX", "//", "...", "\u2028"]
hostile_path = st.lists(st.sampled_from(PATH_PIECES) | st.text(max_size=4), max_size=12).map("".join)

REFUSED = ["../x", "memories/a", "/tmp/memories/a", "/memoriesX/a", "//memories/a", "/memories/..", "/memories/../x",
           "/memories/a/../../x", "/memories/a/..", "/memories/.", "/memories/a/./b", "/memories/%2e%2e/x",
           "/memories/%252e%252e/x", "/memories/..%2fx", "/memories/．．/x", "/memories/\u2025/x", "/memories/\u2024\u2024",
           "/memories/a\\..\\..\\x", "/memories/a\x00b", "/memories/a\nb", "/memories/a\u2028b", "/memories/a\u202eb",
           "/memories/ a", "/memories/a ", "/memories/x/\u2100", "/memories/\uff0fetc", "/memories/" + "n" * 256]


def names(path: str) -> list[str]:
    return path.split("/")[2:]


@settings(max_examples=400)
@given(hostile_path)
def test_no_accepted_path_leaves_the_memory_root(raw):
    try:
        path = canonical(raw)
    except FileError:
        return
    assert path == ROOT or path.startswith(ROOT + "/")
    assert posixpath.normpath(path) == path  # no empty, "." or ".." names: resolving changes nothing
    assert all(unicodedata.normalize("NFKC", n) not in (".", "..") and "/" not in unicodedata.normalize("NFKC", n)
               for n in names(path))
    assert canonical(path) == path


@pytest.mark.parametrize("raw", REFUSED)
def test_traversal_and_tricks_are_refused(raw):
    with pytest.raises(FileError):
        canonical(raw)


@pytest.mark.parametrize("raw, expected", [("/memories", ROOT), ("/memories/", ROOT), ("/memories//a.md/", "/memories/a.md"),
                                           ("/memories/中文 笔记.md", "/memories/中文 笔记.md"),
                                           ("/memories/50%.md", "/memories/50%.md"), ("/memories/...", "/memories/...")])
def test_plain_paths_are_accepted(raw, expected):
    assert canonical(raw) == expected


def memory_text(cfg) -> str:
    path = cfg.project_home / api.MEMORY_FILE
    return path.read_text("utf-8") if path.exists() else ""


def test_a_file_is_an_entry_that_search_finds(cfg):
    files = MemoryFiles(cfg)
    with files.change() as f:
        stored = f.write("/memories/db.md", "# Databases\nThe staging database is read-only.\n")
    assert stored.content == "# Databases\nThe staging database is read-only." and not stored.redacted
    [hit] = api.search(cfg, "staging database read-only", limit=1)
    assert hit.entry.text == "/memories/db.md\n# Databases\nThe staging database is read-only."
    assert (hit.entry.type, hit.entry.section) == ("note", "Notes")
    with files.change() as f:
        f.move("/memories/db.md", "/memories/infra/db.md")
    [hit] = api.search(cfg, "staging database read-only", limit=1)
    assert hit.entry.text.startswith("/memories/infra/db.md\n")
    with files.change() as f:
        assert f.delete("/memories/infra") == 1
    assert api.search(cfg, "staging database read-only") == []


text_lines = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200).map(normalize_text)


@settings(max_examples=60, deadline=None)
@given(text_lines, text_lines)
def test_write_stores_the_redacted_text_and_leaves_other_entries_alone(tmp_path_factory, first, second):
    from memory_helpers import JIEBA_CACHE

    from memory.config import MemoryConfig

    home = tmp_path_factory.mktemp("m")
    cfg = MemoryConfig(project_home=home / "p", global_home=home / "g", cache_dir=JIEBA_CACHE)
    api.store(cfg, "decision", "Use filelock for MEMORY.md writes")
    files = MemoryFiles(cfg)
    with files.change() as f:
        f.write("/memories/a.md", first)
    api.store(cfg, "gotcha", "Tabs break the YAML loader")
    before = [e for e in api.list_entries(cfg) if not e.text.startswith(ROOT)]
    with files.change() as f:
        stored = f.write("/memories/a.md", second)
    assert stored.content == files.read().content("/memories/a.md") == MemoryFiles(cfg).read().content("/memories/a.md")
    assert stored.content == normalize_text(files.redact(second))
    assert [e for e in api.list_entries(cfg) if not e.text.startswith(ROOT)] == before


def test_secrets_are_redacted_and_secret_paths_refused(cfg):
    token = "ghp_" + "A1b2" * 9
    with MemoryFiles(cfg).change() as f:
        stored = f.write("/memories/ci.md", f"CI token: {token}")
    assert stored.redacted and token not in memory_text(cfg) and "[REDACTED:" in stored.content
    with pytest.raises(FileError, match="secret"), MemoryFiles(cfg).change() as f:
        f.write(f"/memories/{token}.md", "x")


def test_oversized_writes_change_nothing(cfg):
    files = MemoryFiles(cfg, limits=Limits(file_bytes=100, total_bytes=150))
    with files.change() as f:
        f.write("/memories/a.md", "a" * 100)
    before = memory_text(cfg)
    for path, text in [("/memories/b.md", "é" * 60), ("/memories/b.md", "b" * 51), ("/memories/a.md", "a" * 101)]:
        with pytest.raises(FileError, match="nothing was written"), files.change() as f:
            f.write("/memories/c.md", "fine")  # a change that fails writes none of its parts
            f.write(path, text)
        assert memory_text(cfg) == before
        assert files.read().content("/memories/c.md") is None  # nor does it linger in the parsed copy


def test_a_path_is_never_both_file_and_directory(cfg):
    with MemoryFiles(cfg).change() as f:
        f.write("/memories/a", "file")
        f.write("/memories/d/x.md", "x")
        for path in ("/memories/a/b.md", "/memories/d", ROOT):
            with pytest.raises(FileError):
                f.write(path, "no")
        with pytest.raises(FileError):
            f.move("/memories/d", "/memories/d/e")


def test_hand_written_entries_are_files_and_keep_their_neighbours(cfg):
    path = cfg.project_home / api.MEMORY_FILE
    path.parent.mkdir(parents=True)
    hand = ("# Memory\n\n## Facts\n\n- /memories/hand.md\n  line one\n- Plain fact, kept as written.\n\n"
            "Some prose a person wrote.\n")
    path.write_text(hand, "utf-8")
    files = MemoryFiles(cfg)
    assert files.read().content("/memories/hand.md") == "line one"
    with files.change() as f:
        f.write("/memories/hand.md", "line one\nline two")
    text = memory_text(cfg)
    assert text.startswith("# Memory\n\n## Facts\n\n- /memories/hand.md\n  line one\n  line two <!-- m-")
    assert text.endswith("-->\n- Plain fact, kept as written.\n\nSome prose a person wrote.\n")


def test_dream_leaves_memory_files_alone(cfg):
    with MemoryFiles(cfg).change() as f:
        for name in ("a", "b"):  # identical files: dream would fold one into the other
            f.write(f"/memories/{name}.md", "Deploys go through the release branch and need two approvals.")
    api.store(cfg, "note", "Deploys go through the release branch and need two approvals.", notes=True)
    dream.dream(cfg)
    files = MemoryFiles(cfg).read()
    assert sorted(files.entries) == ["/memories/a.md", "/memories/b.md"]


def test_concurrent_edits_lose_nothing(cfg):
    files = MemoryFiles(cfg)
    with files.change() as f:
        f.write("/memories/log.md", "start")

    def worker(n: int) -> None:
        for i in range(8):
            with MemoryFiles(cfg).change() as f:
                f.write(f"/memories/w{n}/{i}.md", f"worker {n} item {i}")
                f.write("/memories/log.md", f.content("/memories/log.md") + f"\n{n}-{i}")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = files.read()
    assert len(final.below(ROOT)) == 33
    assert sorted(final.content("/memories/log.md").split("\n")[1:]) == sorted(f"{n}-{i}" for n in range(4) for i in range(8))


def test_reading_files_cannot_change_them(cfg):
    with pytest.raises(RuntimeError):
        MemoryFiles(cfg).read().write("/memories/a.md", "x")


def _indexed(cfg) -> set:
    index = api.open_index(cfg)
    return {index.entry(doc) for doc, _ in index.rows.items()}


def test_memory_tool_writes_keep_the_index_in_step_without_re_reading_the_file(cfg, monkeypatch):
    """Like `store`: a search right after a create, edit, move or delete finds the change from the
    index the write updated (in this process and on disk), without parsing MEMORY.md again."""
    import memory.markdown

    api._indexes.clear()
    for i in range(5):
        api.store(cfg, "fact", f"filler fact number {i}")
    api.search(cfg, "filler")  # the index is open in this process
    files = MemoryFiles(cfg)
    steps = [
        (lambda f: f.write("/memories/db.md", "The staging database is read-only."), "staging database", "/memories/db.md"),
        (lambda f: f.write("/memories/db.md", "The staging database takes writes on Sundays."), "sundays", "/memories/db.md"),
        (lambda f: f.move("/memories/db.md", "/memories/infra/db.md"), "staging sundays", "/memories/infra/db.md"),
        (lambda f: f.delete("/memories/infra"), "staging", None),
    ]
    for change, query, expected in steps:
        with files.change() as f:
            change(f)
        with monkeypatch.context() as patched:
            patched.setattr(memory.markdown, "parse", lambda *a, **k: pytest.fail("MEMORY.md was parsed again"))
            hits = api.search(cfg, query, limit=1)
            found = [hit.entry.text.partition("\n")[0] for hit in hits if hit.entry.text.startswith(ROOT)]
            assert found == ([expected] if expected else [])
        assert _indexed(cfg) == set(api.list_entries(cfg))  # the same entries a rebuild indexes
        api._indexes.clear()  # a new process: the saved index is in step too
        assert _indexed(cfg) == set(api.list_entries(cfg))


def test_a_memory_tool_write_beside_a_hand_copied_twin_keeps_the_twin_searchable(cfg):
    """A person copied an entry (same id, same text): rewriting the file replaces the first copy;
    the index still has the copy that stayed."""
    path = cfg.project_home / api.MEMORY_FILE
    path.parent.mkdir(parents=True)
    twin = "- /memories/plan.md\n  migrate the billing tables <!-- m-0000beef 2025-01-01 -->\n"
    path.write_text("# Memory\n\n## Notes\n\n" + twin + twin, "utf-8")
    api._indexes.clear()
    assert api.search(cfg, "billing")
    with MemoryFiles(cfg).change() as f:
        f.write("/memories/plan.md", "rename the invoice columns")
    assert _indexed(cfg) == set(api.list_entries(cfg))
    assert [h.entry.text for h in api.search(cfg, "billing")] == ["/memories/plan.md\nmigrate the billing tables"]
    assert api.search(cfg, "invoice")[0].entry.text == "/memories/plan.md\nrename the invoice columns"
