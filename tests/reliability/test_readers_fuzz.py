"""Session readers on random and garbled input: never raise (only UnknownFormat when the
format cannot be detected), count what they cannot read, and yield bodies the pipeline takes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccr.store import CCRStore
from compress.formats.sessions import FORMATS, UnknownFormat, read_text
from compress.runner.pipeline import run
from compress.state.session import Session
from tests.strategies import session_items, session_jsonl, session_values

LINE_READERS = sorted(name for name, m in FORMATS.items() if not hasattr(m, "read_object"))
OBJECT_READERS = sorted(name for name, m in FORMATS.items() if hasattr(m, "read_object"))
FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def requests_run_clean(transcript) -> None:
    """The last recorded call is a body the pipeline compresses without failing open."""
    if transcript.calls:
        report = run(transcript.request(len(transcript.calls) - 1), session=Session.memory(),
                     store=CCRStore.in_memory()).report
        assert report.error == "", report.error


@pytest.mark.parametrize("fmt", LINE_READERS)
@FUZZ
@given(data=session_jsonl())
def test_line_readers_count_garbage_and_never_raise(fmt, data):
    text, garbage = data
    transcript = read_text(text, fmt)
    assert transcript.malformed >= garbage
    requests_run_clean(transcript)


@pytest.mark.parametrize("fmt", OBJECT_READERS)
@FUZZ
@given(data=st.one_of(session_items, st.dictionaries(st.sampled_from(["messages", "history", "info", "request"]),
                                                      session_values, min_size=1)))
def test_object_readers_never_raise(fmt, data):
    requests_run_clean(FORMATS[fmt].read_object(data))


@FUZZ
@given(text=st.one_of(session_jsonl().map(lambda d: d[0]), st.text(max_size=300)))
def test_detection_raises_only_unknown_format(text):
    try:
        read_text(text)
    except UnknownFormat as exc:
        assert "\n" not in str(exc)
