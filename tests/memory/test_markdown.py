"""MEMORY.md parsing is lossless; added entries parse back unchanged; edits touch only their lines."""

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.entry import SECTIONS, TYPES, Entry
from memory.markdown import format_entry, normalize_text, parse

# Text built from markdown-significant pieces, so the parser sees headings, bullets, fences, comments.
PIECES = ["## Decisions", "## Facts", "# Title", "## Other", "- ", "* ", "  ", "\t", "\n", "\r\n", "```",
          "<!-- m-1a2b3c4d 2025-01-02 pinned #x -->", "<!--", "-->", "text", "中文", " ", "#tag", "m-"]
markdownish = st.lists(st.sampled_from(PIECES) | st.text(max_size=5), max_size=40).map("".join)
entry_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=80).map(normalize_text).filter(bool)
tags = st.lists(st.from_regex(r"[a-z0-9_.-]{1,8}", fullmatch=True), max_size=3, unique=True).map(tuple)


@settings(max_examples=400)
@given(markdownish)
def test_parse_then_serialize_is_byte_identical_or_only_gives_a_repeated_id_a_new_one(text):
    doc = parse(text)
    entries = doc.entries()
    assert len({e.id for e in entries}) == len(entries)
    if doc.text() != text:  # an id repeated: the later entry's is new, all else as it was
        again = parse(doc.text()).entries()
        assert [e.id for e in again] == [e.id for e in entries]
        assert [(e.text, e.created, e.pinned, e.tags) for e in again] == [(e.text, e.created, e.pinned, e.tags)
                                                                          for e in entries]


def test_a_repeated_id_is_the_only_change_serializing_makes():
    text = "## Facts\n\n- a <!-- m-1a2b3c4d 2025-01-02 pinned #x -->\n- b <!-- m-1a2b3c4d 2025-01-03 -->\n"
    first, second = parse(text).entries()
    assert parse(text).text() == text.replace("m-1a2b3c4d 2025-01-03", second.id + " 2025-01-03")
    assert first.id == "m-1a2b3c4d" != second.id and second.created == "2025-01-03"


@given(st.text(max_size=300))
def test_any_text_round_trips(text):
    assert parse(text, default_type="note").text() == text


@settings(max_examples=200)
@given(markdownish, st.sampled_from(TYPES), entry_text, st.booleans(), tags)
def test_added_entry_parses_back_and_other_text_survives(existing, kind, text, pin, entry_tags):
    doc = parse(existing)
    before = [e for e in doc.entries()]
    entry = Entry("m-0badc0de", kind, text, "2025-03-04", pin, entry_tags)
    doc.add(entry)
    again = parse(doc.text())
    found = [e for e in again.entries() if e.id == "m-0badc0de"]
    assert found, doc.text()
    got = found[-1]
    assert (got.type, got.text, got.created, got.pinned, got.tags) == (kind, text, "2025-03-04", pin, entry_tags)
    # removing it again restores every other entry
    again.remove("m-0badc0de")
    assert [(e.id, e.text) for e in parse(again.text()).entries()] == [(e.id, e.text) for e in before]


def test_hand_edited_file_is_understood_and_kept():
    text = (
        "# Notes for humans\n\nIntro paragraph.\n\n## decisions\n"
        "* Written by hand\n  over two lines\n"
        "- Tool written <!-- m-12345678 2025-01-01 #db -->\n\n"
        "## Architecture\n- not a memory entry\n\n```\n## Facts\n- inside a fence\n```\n"
    )
    doc = parse(text)
    entries = doc.entries()
    assert [(e.text, e.type, e.section) for e in entries] == [
        ("Written by hand\nover two lines", "decision", "decisions"),
        ("Tool written", "decision", "decisions"),
    ]
    assert entries[1].id == "m-12345678" and entries[1].tags == ("db",)
    assert entries[0].id.startswith("m-") and parse(text).entries()[0].id == entries[0].id
    doc.remove("m-12345678")
    assert doc.text() == text.replace("- Tool written <!-- m-12345678 2025-01-01 #db -->\n", "")


def test_new_file_gets_a_readable_layout():
    doc = parse("")
    doc.add(Entry("m-00000001", "constraint", "Never force-push main", "2025-01-01", True))
    doc.add(Entry("m-00000002", "constraint", "Run tests first\nalways", "2025-01-02"))
    assert doc.text() == (
        "# Memory\n\n## Constraints\n\n"
        "- Never force-push main <!-- m-00000001 2025-01-01 pinned -->\n"
        "- Run tests first\n  always <!-- m-00000002 2025-01-02 -->\n"
    )
    assert SECTIONS["constraint"] == "Constraints"


def test_format_entry_keeps_indentation_and_blank_lines():
    entry = Entry("m-00000003", "note", "code:\n\n    indented()", None)
    assert format_entry(entry) == "- code:\n\n      indented() <!-- m-00000003 -->\n"
    assert parse("## Notes\n" + format_entry(entry)).entries()[0].text == entry.text
