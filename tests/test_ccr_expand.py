import pytest
from hypothesis import given
from hypothesis import strategies as st

import ccr.expand
from ccr.expand import expand, parse_lines, split_lines
from ccr.keys import make_key
from ccr.store import CCRStore

ORIGINAL = "".join(f"line {i}\n" for i in range(1, 301))


@pytest.fixture
def store():
    with CCRStore.in_memory() as s:
        yield s


@pytest.fixture
def key(store):
    return store.put(ORIGINAL)


def test_without_options_returns_the_exact_original(store, key):
    result = expand(store, key)
    assert (result.status, result.text) == ("ok", ORIGINAL)


@pytest.mark.parametrize(
    "spec, first, last",
    [("120:122", 120, 122), ("299:", 299, 300), (":2", 1, 2), ("7", 7, 7), ("290:999", 290, 300)],
)
def test_line_slices_are_one_based_inclusive_and_numbered(store, key, spec, first, last):
    result = expand(store, key, lines=spec)
    width = len(str(last))
    assert result.text == "".join(f"{n:>{width}}\tline {n}\n" for n in range(first, last + 1))


@pytest.mark.parametrize("spec", ["x", "0:3", "5:3", "-1:", "1:2:3", "301:"])
def test_bad_line_ranges_are_bad_requests(store, key, spec):
    result = expand(store, key, lines=spec)
    assert result.status == "bad_request" and result.text is None
    assert result.message.startswith(f'ctxmill: deep_expand("{key}"): lines=')


def test_grep_returns_matching_lines_with_numbers(store, key):
    result = expand(store, key, grep=r"line 2\d$", lines=":100")
    assert result.text == "".join(f"{n}\tline {n}\n" for n in range(20, 30))


def test_grep_without_match_and_with_bad_pattern(store, key):
    assert expand(store, key, grep="nothing").status == "no_match"
    bad = expand(store, key, grep="(")
    assert bad.status == "bad_request" and "not a valid regex" in bad.message


def test_catastrophic_grep_pattern_times_out(store):
    key = store.put("a" * 40 + "!\n")
    result = expand(store, key, grep=r"(a|aa)+$", grep_timeout=0.05)
    assert result.status == "bad_request" and "took over 0.05 s" in result.message


def test_grep_output_is_capped(store, key, monkeypatch):
    monkeypatch.setattr(ccr.expand, "MAX_GREP_LINES", 3)
    lines = expand(store, key, grep="line").text.splitlines()
    assert lines[:3] == ["1\tline 1", "2\tline 2", "3\tline 3"]
    assert lines[3] == "ctxmill: 297 more matching lines not shown; narrow grep or add lines"


@pytest.mark.parametrize("bad_key, status", [("../../etc/passwd", "invalid"), (make_key("absent"), "missing")])
def test_store_problems_pass_through(store, bad_key, status):
    result = expand(store, bad_key, lines="1:2")
    assert result.status == status and result.text is None and result.message.startswith("ctxmill: ")


@given(st.text())
def test_numbered_full_slice_reproduces_the_lines(text):
    store = CCRStore.in_memory()
    lines = split_lines(text)
    if not lines:
        return
    result = expand(store, store.put(text), lines="1:")
    assert [row.split("\t", 1)[1] for row in result.text[:-1].split("\n")] == lines
    assert parse_lines(":", len(lines)) == (1, len(lines))
