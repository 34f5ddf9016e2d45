"""Inputs the fuzzers (tests/reliability/test_readers_fuzz.py, bench/fuzz.py) found crashing,
kept as regression tests: each must now be read without raising."""

from __future__ import annotations

import pytest

from compress.formats.sessions import FORMATS, UnknownFormat, read_text

CRASHES = [
    ("opencode", {"messages": None}),  # TypeError: 'NoneType' object is not iterable
    ("opencode", {"messages": "abc"}),
    ("swe-agent", {"history": 7}),
]
DETECTION_CRASHES = [
    '{}\n{"type": []}',  # codex.sniff: TypeError: unhashable type: 'list'
    '{"type": {"a": 1}, "payload": {}}',
]


@pytest.mark.parametrize(("fmt", "data"), CRASHES)
def test_object_reader_counts_a_non_list_as_malformed(fmt, data):
    transcript = FORMATS[fmt].read_object(data)
    assert transcript.messages == [] and transcript.malformed == 1


@pytest.mark.parametrize("text", DETECTION_CRASHES)
def test_detection_of_odd_json_raises_only_unknown_format(text):
    with pytest.raises(UnknownFormat):
        read_text(text)


def test_an_unclosed_meta_comment_in_entry_text_survives_a_round_trip():
    """bench/fuzz.py (memory target): the text's own `<!-- m-…` swallowed the real meta comment."""
    from memory.entry import Entry
    from memory.markdown import parse

    doc = parse("# Memory\n")
    text = "a fact <!-- m-1a2b3c4d 2025-01-01pi"
    added = doc.add(Entry("m-9f8e7d6c", "fact", text, "2025-06-01", False, ()))
    (entry,) = parse(doc.text()).entries()
    assert (entry.id, entry.text, entry.created) == (added.id, text, "2025-06-01")


def test_lone_surrogates_in_memory_text_neither_crash_parse_nor_store(tmp_path):
    """bench/fuzz.py (memory target): content_id raised UnicodeEncodeError on a lone surrogate."""
    from memory import api
    from memory.config import MemoryConfig
    from memory.markdown import parse

    (entry,) = parse("## Facts\n\n- broken \udcc2 byte\n").entries()
    assert entry.id.startswith("m-")
    cfg = MemoryConfig(project_home=tmp_path / "p", global_home=tmp_path / "g")
    stored = api.store(cfg, "fact", "tool output had a raw byte \udcc2 in it")
    assert stored.text == "tool output had a raw byte \ufffd in it"
    assert [e.text for e in api.list_entries(cfg)] == [stored.text]


def test_an_added_entry_does_not_absorb_a_following_indented_line():
    """bench/fuzz.py (memory target), minimised."""
    from memory.entry import Entry
    from memory.markdown import parse

    doc = parse("## Facts\n\n\t an indented note, not a bullet\n")
    doc.add(Entry("m-1a2b3c4d", "fact", "new", "2025-01-01", False, ()))
    (entry,) = parse(doc.text()).entries()
    assert entry.text == "new"


@pytest.mark.parametrize("body", [
    {"messages": [{"role": []}]},  # TypeError: unhashable type: 'list' in compress.formats.requests.detect
    {"messages": [{"role": "user", "content": [{"type": {"a": 1}}]}]},
])
def test_detect_never_raises_on_unhashable_roles_or_types(body, tmp_path):
    """tests/reliability/test_readers_fuzz.py (request reader): detect() crashed, so did the CLI."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import orjson

    from compress.formats.requests import detect

    assert detect(body) in ("anthropic", "openai")
    request = tmp_path / "r.json"
    request.write_bytes(orjson.dumps(body))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "CTXMILL_HOME": str(tmp_path / "h")}
    done = subprocess.run([sys.executable, "-m", "ctxmill", "compress", str(request)], env=env, capture_output=True,
                          text=True, cwd=tmp_path)
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize("encoded", [
    # a `~~~` fence left open at the end of the file, after the section's last entry
    "I29yeQoKIyMgRmFjdHMKCi0oYSBmDX5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+fn5+CgojIyBhY3QgPGVkICt4IC0pPgogcwpgdQQ=",
    # the same with U+001E, a line boundary to str.splitlines(), after the fence
    "ACMiTWVvcgoKIyMgRmFD5XRz9rKaA/8gIzAKIyMgRmFjdHMKHh4eHh5jCgp+fn4eHh4eHg==",
], ids=["open-fence", "open-fence-record-separator"])
def test_an_entry_added_to_a_section_ending_in_an_open_fence_is_not_code(encoded):
    """bench/fuzz.py (memory target): the new entry landed inside the unclosed fence."""
    import base64

    from memory.entry import Entry
    from memory.markdown import normalize_text, parse

    text = base64.b64decode(encoded).decode("utf-8", "surrogateescape")
    doc = parse(text)
    body = normalize_text(text[:80]) or "x"
    added = doc.add(Entry("m-1a2b3c4d", "fact", body, "2025-01-01", False, ()))
    assert [(e.id, e.text) for e in parse(doc.text()).entries()] == [(added.id, body)]
