"""ground.jsonvalues.strings_in: every string of a parsed JSON value, in order, at any depth."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ground.jsonvalues import strings_in

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
                           max_leaves=30)


def _recursive(value):
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _recursive(v)]
    if isinstance(value, list):
        return [s for v in value for s in _recursive(v)]
    return []


@given(json_values)
def test_strings_in_document_order(value):
    assert list(strings_in(value)) == _recursive(value)


def test_any_depth_and_keys_are_not_strings_of_the_value():
    deep: object = "leaf"
    for _ in range(50_000):
        deep = [{"k": deep}]
    assert list(strings_in(deep)) == ["leaf"]
    assert list(strings_in({"path": "/a", "n": 3, "edits": [{"old": "x"}, "y"]})) == ["/a", "x", "y"]
