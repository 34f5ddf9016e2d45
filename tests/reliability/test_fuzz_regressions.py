"""Inputs the fuzzers (tests/reliability/test_readers_fuzz.py, bench/fuzz.py) found crashing,
kept as regression tests: each must now be read without raising."""

from __future__ import annotations

import pytest

from compress.formats import FORMATS, UnknownFormat, read_text

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
