"""memory.parsed: a memory file's entries, parsed once per change of its bytes, from a cache that
is the user's own (stale -> re-parsed, corrupt -> ignored, a foreign folder or a link -> ignored)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory import api, markdown, parsed
from memory.config import MemoryConfig

WORDS = st.text(alphabet="abcdefghij #-*`<>!:", min_size=1, max_size=30)


def _memory(cfg: MemoryConfig, text: str):
    path = cfg.project_home / "MEMORY.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _cache_files(cfg: MemoryConfig) -> list:
    folder = cfg.global_home.joinpath(*parsed.CACHE_FOLDER)
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _parse(path, scope="project", default_type=None):
    return markdown.parse(path.read_text(encoding="utf-8"), scope, str(path), default_type).entries()


def _refuse_parsing(monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("parsed although the cache holds these bytes")

    monkeypatch.setattr(markdown, "parse", refused)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["Facts", "Decisions", "Gotchas", "Notes"]), WORDS, st.booleans()),
                max_size=8))
def test_a_cached_list_is_what_parsing_gives(tmp_path_factory, items):
    tmp = tmp_path_factory.mktemp("m")
    cfg = MemoryConfig(tmp / "proj" / ".ctxmill", tmp / "global")
    lines = ["# Memory", ""]
    for n, (section, text, pin) in enumerate(items):
        lines += [f"## {section}", "", f"- {text} <!-- m-{n:08x} 2026-01-02{' pinned' if pin else ''} -->", ""]
    path = _memory(cfg, "\n".join(lines))
    first = parsed.entries(cfg, path, "project", None)
    assert first == _parse(path)
    assert parsed.entries(cfg, path, "project", None) == first  # the second read comes from the cache
    assert parsed.entries(cfg, path, "global", None) == _parse(path, "global")  # another scope: its own key


def test_a_second_read_parses_nothing_and_a_change_is_parsed(cfg, monkeypatch):
    path = _memory(cfg, "# Memory\n\n## Facts\n\n- the port is 8080 <!-- m-00000001 2026-01-02 -->\n")
    assert [e.text for e in parsed.entries(cfg, path, "project", None)] == ["the port is 8080"]
    stamp = os.stat(path)
    with monkeypatch.context() as patched:
        _refuse_parsing(patched)
        assert [e.text for e in parsed.entries(cfg, path, "project", None)] == ["the port is 8080"]
    path.write_text("# Memory\n\n## Facts\n\n- the port is 9090 <!-- m-00000001 2026-01-02 -->\n")
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # same size, same time: the bytes decide
    assert [e.text for e in parsed.entries(cfg, path, "project", None)] == ["the port is 9090"]
    assert len(_cache_files(cfg)) == 1  # one cache per memory file, rewritten


@pytest.mark.parametrize("garbage", [b"", b"{", b"\xff\xfe", b"[]", b'{"key": 1}', b"null"])
def test_a_corrupt_cache_is_ignored_and_rewritten(cfg, garbage):
    path = _memory(cfg, "# Memory\n\n## Facts\n\n- kept <!-- m-00000001 -->\n")
    parsed.entries(cfg, path, "project", None)
    [cache] = _cache_files(cfg)
    cache.write_bytes(garbage)
    assert [e.text for e in parsed.entries(cfg, path, "project", None)] == ["kept"]
    assert b'"kept"' in cache.read_bytes()


def test_a_cache_whose_rows_are_not_entries_is_ignored(cfg):
    path = _memory(cfg, "# Memory\n\n## Facts\n\n- real <!-- m-00000001 -->\n")
    parsed.entries(cfg, path, "project", None)
    [cache] = _cache_files(cfg)
    good = cache.read_text()
    for forged in (good.replace('"real"', "7"), good.replace('"real"', '"real","extra"'),
                   good.replace("false", '"no"'), good.replace("false,[]", "false,[1]")):
        cache.write_text(forged)
        [entry] = parsed.entries(cfg, path, "project", None)
        assert (entry.text, entry.pinned) == ("real", False)


def test_a_cache_that_is_a_link_is_not_read(cfg, tmp_path, monkeypatch):
    path = _memory(cfg, "# Memory\n\n## Facts\n\n- mine <!-- m-00000001 -->\n")
    parsed.entries(cfg, path, "project", None)
    [cache] = _cache_files(cfg)
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_text(cache.read_text().replace('"mine"', '"planted"'))
    cache.unlink()
    cache.symlink_to(elsewhere)
    assert [e.text for e in parsed.entries(cfg, path, "project", None)] == ["mine"]
    assert "planted" in elsewhere.read_text()  # not written through the link either


def test_a_cache_folder_someone_else_owns_is_neither_read_nor_written(cfg, monkeypatch):
    path = _memory(cfg, "# Memory\n\n## Facts\n\n- mine <!-- m-00000001 -->\n")
    parsed.entries(cfg, path, "project", None)
    [cache] = _cache_files(cfg)
    cache.write_text(cache.read_text().replace('"mine"', '"planted"'))
    before = cache.read_bytes()
    monkeypatch.setattr(os, "getuid", lambda: os.stat(cache.parent).st_uid + 1)  # the folder is now another's
    assert [e.text for e in parsed.entries(cfg, path, "project", None)] == ["mine"]
    assert cache.read_bytes() == before


def test_a_memory_file_in_a_repository_is_cached_in_the_users_global_home_only(cfg):
    path = _memory(cfg, "# Memory\n\n## Facts\n\n- one <!-- m-00000001 -->\n")
    before = sorted(p.relative_to(cfg.project_home) for p in cfg.project_home.rglob("*"))
    assert [e.text for e in api.list_entries(cfg)] == ["one"]
    assert sorted(p.relative_to(cfg.project_home) for p in cfg.project_home.rglob("*")) == before
    assert len(_cache_files(cfg)) == 1 and path.exists()
