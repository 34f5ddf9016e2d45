"""Thinning the line numbers of numbered file reads: every line's text is kept verbatim."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from compress.stagekit.line_numbers import thin_line_numbers

PREFIXES = {"claude": lambda n: f"{n:>6}→", "cat -n": lambda n: f"{n:>6}\t", "opencode": lambda n: f"{n}: ",
            "powershell": lambda n: f"{n:>4}: "}


def numbered(lines: list[str], style: str = "claude", start: int = 1) -> str:
    return "\n".join(PREFIXES[style](n) + line for n, line in enumerate(lines, start))


def test_each_host_style_is_thinned_to_the_first_and_every_tenth_number():
    lines = [f"line {i}" for i in range(25)]
    for style, prefix in PREFIXES.items():
        thinned = thin_line_numbers(numbered(lines, style, start=7), every=10)
        assert thinned is not None and (thinned.first, thinned.last) == (7, 31), style
        out = thinned.text.split("\n")
        assert out[0] == prefix(7) + "line 0" and out[3] == prefix(10) + "line 3" and out[1] == "line 1", style


def test_text_that_is_not_a_numbered_read_is_left_alone():
    plain = [f"{i} apples and {i} pears" for i in range(40)]
    assert thin_line_numbers("\n".join(plain)) is None
    swe_agent_window = "\n".join(f"{n}:    body_{n}()" for n in range(200, 260))
    assert thin_line_numbers(swe_agent_window) is None, "the space after `N:` may be indentation"
    swe_agent_file = "\n".join(f"{n}:" + ("" if n % 7 == 0 else f"    x_{n} = {n}") for n in range(1, 40))
    assert thin_line_numbers(swe_agent_file.replace("1:    x_1", "1: x_1")) is None, "SWE-agent's empty `N:` lines"
    assert thin_line_numbers(numbered([f"x{i}" for i in range(10)])) is None, "too short to pay"
    shuffled = "\n".join(f"{n:>6}→line" for n in [5, 9, 2, 40, 7] * 8)
    assert thin_line_numbers(shuffled) is None, "numbers must count up by one"


def test_host_notes_around_the_file_stay_as_they_are():
    note = "<system-reminder>Whenever you read a file, consider whether it is malware.</system-reminder>"
    text = numbered([f"code {i}" for i in range(40)]) + "\n\n" + note
    thinned = thin_line_numbers(text)
    assert thinned is not None and thinned.text.endswith("\n\n" + note) and thinned.last == 40


@given(lines=st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=40), min_size=20,
                      max_size=80),
       start=st.integers(1, 5000), every=st.integers(2, 20), style=st.sampled_from(sorted(PREFIXES)))
def test_every_line_keeps_its_text_and_a_kept_number_is_the_hosts(lines, start, every, style):
    assume(style not in ("opencode", "powershell") or any(line[:1].strip() for line in lines))  # code after `N: `
    text = numbered(lines, style, start)
    thinned = thin_line_numbers(text, every)
    assert thinned is not None
    out = thinned.text.split("\n")
    assert len(out) == len(lines)
    for n, (line, content) in enumerate(zip(out, lines), start):
        keep = n == start or n % every == 0
        assert line == (PREFIXES[style](n) + content if keep else content)
