import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ccr.keys import make_key
from ccr.markers import (
    blob_cut,
    chars_cut,
    entries_omitted,
    find_markers,
    find_placeholders,
    format_inline,
    format_marker,
    format_note,
    has_marker,
    lines_omitted,
)

# Any str, with lone surrogates and the characters the writer must escape drawn often.
ANY_TEXT = st.text(
    st.characters(exclude_categories=())
    | st.characters(categories=["Cs"])
    | st.sampled_from(list("[]<>\\\n\r\u2028·\"")),
)
KEYS = st.text().map(make_key)
FORMATS = [("marker", format_marker), ("note", format_note)]


@pytest.mark.parametrize("kind, fmt", FORMATS)
@given(summary=ANY_TEXT, key=KEYS, before=ANY_TEXT, after=ANY_TEXT)
def test_round_trip_recovers_summary_key_and_position(kind, fmt, summary, key, before, after):
    assume("ctxmill" not in before + after)
    written = fmt(summary, key)
    found = find_markers(before + written + after)
    assert [(m.kind, m.summary, m.key, m.start, m.end) for m in found] == [
        (kind, summary, key, len(before), len(before) + len(written))
    ]
    assert has_marker(before + written + after)


@pytest.mark.parametrize("kind, fmt", FORMATS)
@given(summary=ANY_TEXT, key=KEYS)
def test_written_marker_is_one_clean_utf8_line(kind, fmt, summary, key):
    written = fmt(summary, key)
    written.encode("utf-8")  # strict: lone surrogates were escaped
    assert len(written.splitlines()) == 1
    inner = written[written.index(": ") + 2 : written.rindex(" · deep_expand(")]
    assert not any(c in inner for c in "[]<>")


def test_example_marker_text():
    key = make_key("original")
    summary = "kept 80 of 812 lines (head 50, 10 key, tail 20)"
    assert format_marker(summary, key) == f'[ctxmill: {summary} · deep_expand("{key}")]'
    assert format_note("superseded by a later write", key) == (
        f'<<ctxmill: superseded by a later write · deep_expand("{key}")>>'
    )
    assert format_inline("12 lines omitted") == "[ctxmill: 12 lines omitted]"
    assert format_inline("3 more in a[1]/ (8 entries)") == "[ctxmill: 3 more in a[1]/ (8 entries)]"  # as given
    assert not has_marker(format_inline("12 lines omitted"))  # names no key


@pytest.mark.parametrize("summary", ["a]b", "x >> y", "line1\nline2", "中文 · 摘要", "\udc80", "\\u005b", "", " · deep_expand(\"\")]"])
def test_awkward_summaries_round_trip(summary):
    key = make_key(summary)
    for kind, fmt in FORMATS:
        (marker,) = find_markers(fmt(summary, key))
        assert (marker.kind, marker.summary, marker.key) == (kind, summary, key)


def test_several_markers_in_order():
    k1, k2 = make_key("1"), make_key("2")
    text = f"a\n{format_marker('one', k1)}\nb {format_note('two', k2)} c {format_marker('three', k2)}"
    assert [(m.kind, m.summary, m.key) for m in find_markers(text)] == [
        ("marker", "one", k1), ("note", "two", k2), ("marker", "three", k2)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "plain text",
        "[ctxmill: no key]",
        '[ctxmill: bad key · deep_expand("XYZ")]',
        f'[ctxmill: short key · deep_expand("{make_key("x")[:31]}")]',
        f'[ctxmill: split\nline · deep_expand("{make_key("x")}")]',
        f'<<ctxmill: unterminated · deep_expand("{make_key("x")}")>',
        f'[ctxmill: wrong close · deep_expand("{make_key("x")}")>>',
    ],
)
def test_malformed_markers_are_not_found(text):
    assert find_markers(text) == []
    assert not has_marker(text)


def test_writer_rejects_invalid_keys():
    for bad in ["", "../../etc/passwd", make_key("x").upper()]:
        with pytest.raises(ValueError):
            format_marker("s", bad)
        with pytest.raises(ValueError):
            format_note("s", bad)


FOLDERS = st.text(st.characters(exclude_characters="\n("), max_size=300)  # "/ (" would end the notice early
NOTICES = st.one_of(
    st.integers(0, 10**9).map(lines_omitted),
    st.integers(0, 10**9).map(chars_cut),
    st.tuples(st.sampled_from(["image/png", "binary", "application/vnd.x+json"]),
              st.sampled_from(["103 KB", "1,024 KB", "900 chars"])).map(lambda a: blob_cut(*a)),
    st.tuples(st.integers(1, 10**6), FOLDERS, st.integers(1, 10**6)).map(lambda a: entries_omitted(*a)),
    st.tuples(ANY_TEXT, KEYS).map(lambda a: format_marker(*a)),
    st.tuples(ANY_TEXT, KEYS).map(lambda a: format_note(*a)),
)


@given(notice=NOTICES, before=ANY_TEXT, after=ANY_TEXT)
def test_find_placeholders_finds_every_form_the_writers_write(notice, before, after):
    assume("ctxmill" not in before + after)
    found = find_placeholders(before + notice + after)
    assert [(m.start, m.end) for m in found] == [(len(before), len(before) + len(notice))]
    assert bool(found[0].key) == (" · deep_expand(" in notice)


def test_find_placeholders_leaves_prose_about_markers_alone():
    for prose in ("Markers look like [ctxmill: …].", '[ctxmill: … · deep_expand("KEY")]', "[ctxmill: 45 lines]",
                  "[ctxmill: some words]", "45 lines omitted", "[ctxmill: 3 more in src/]"):
        assert find_placeholders(prose) == []
