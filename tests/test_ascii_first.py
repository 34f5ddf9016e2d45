"""`ground.ascii_first.Pattern` finds what `regex` finds, on ASCII and on any text, for every
pattern that uses it (memory.markdown, repomap.terms); `\\s` and `\\p` are refused."""

from __future__ import annotations

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from ground.ascii_first import Pattern
from memory import markdown
from repomap import terms

USERS = [markdown._META, markdown._DATE, markdown._TAG, terms._PATH]
PIECES = ["<!--", "-->", " ", "\t", "m-", "0a1b2c3d", "#", "tag", "2026-01-02", "/", ".", "~", "-", "_", "x.py",
          "src", "\x1c", "\x1f", "\u0301", "é", "中文", "٣", "\u200d", "pinned", "<", ">"]
texts = st.one_of(st.text(), st.text(alphabet=st.characters(max_codepoint=127)),
                  st.lists(st.sampled_from(PIECES), max_size=12).map("".join))


def _found(pattern, text: str) -> list:
    return [(m.span(), m.groups()) for m in pattern.finditer(text)]


@settings(max_examples=300, deadline=None)
@given(texts)
def test_finds_what_regex_finds(text):
    for pattern in USERS:
        reference = regex.compile(pattern.pattern)
        assert _found(pattern, text) == _found(reference, text)
        assert pattern.findall(text) == reference.findall(text)
        got, want = pattern.search(text), reference.search(text)
        assert (got and got.span()) == (want and want.span())


def test_ascii_text_never_imports_regex_and_the_rest_does():
    import subprocess
    import sys

    code = ("import sys; from ground.ascii_first import Pattern; p = Pattern(r'#([\\w.-]+)');"
            "assert p.findall('a #tag b') == ['tag']; assert 'regex' not in sys.modules;"
            "assert p.findall('#caf\\u00e9') == ['caf\\u00e9']; assert 'regex' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.parametrize("pattern", [r"a\sb", r"\S+", r"\p{L}", r"\P{Cc}"])
def test_refuses_what_re_and_regex_read_differently(pattern):
    with pytest.raises(ValueError):
        Pattern(pattern)
