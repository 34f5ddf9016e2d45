import pytest
from hypothesis import given
from hypothesis import strategies as st

from ccr.keys import is_valid_key, make_key

ANY_TEXT = st.text(st.characters(exclude_categories=()))


@given(ANY_TEXT)
def test_make_key_is_a_valid_key_and_deterministic(text):
    key = make_key(text)
    assert is_valid_key(key)
    assert make_key(text) == key


def test_different_texts_get_different_keys():
    assert len({make_key(t) for t in ["", "a", "a\n", "b", "\udc80", "中文"]}) == 6


@pytest.mark.parametrize(
    "bad",
    ["", "../../etc/passwd", "A" * 32, make_key("x").upper(), make_key("x")[:31], make_key("x") + "0",
     make_key("x") + "\n", "g" * 32, " " + make_key("x")[1:], None, 123, b"0" * 32],
)
def test_is_valid_key_rejects_anything_but_32_lowercase_hex(bad):
    assert not is_valid_key(bad)
