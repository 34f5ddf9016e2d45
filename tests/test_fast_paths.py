"""The speed-ups of the per-turn transform decide exactly what the plain definitions decide:
the error-line scan, key lines of file reads, line-number thinning and sizes, the base64
prefilter, and the trim memo (the memo's bounds: tests/test_memo.py)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from compress.stagekit import kept_lines, output_cut
from compress.stagekit.line_numbers import MIN_NUMBERED_SHARE, NUMBER_PREFIX, content_chars, thin_line_numbers
from compress.stagekit.output_cut import base64_pattern, has_base64_run
from compress.stages import trim_outputs
from compress.vocab.signals import errors as error_signals
from compress.vocab.signals.errors import error_line_indexes, error_line_numbers
from tests.stagekit import anthropic, config, result_texts, run_stage

# Pieces that exercise word boundaries, case, non-ASCII neighbours, the Kelvin sign (lower-cases
# to "k"), overlapping Chinese triggers and the pattern's line-start alternatives.
PIECES = ["error", "ERROR", "Error:", "_error", "errors", "xerror", "errór", "warning", "deprecated", "fatal",
          "trace", "TRACEBAC\u212a", "traceback", "cannot", "can't", "denied", "at ", "  at f(", "E   x",
          'File "a", line 3', "ValueError:", "<tool_use_error>", "exit code 2", "timeout", "报错误", "错误", "警告",
          "é", "漢", "→", "ß", " ", "\t", "-", "_", "1", "\n", "\n"]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_error_scan_finds_exactly_the_error_lines(text):
    assert error_line_numbers(text) == error_line_indexes(text.split("\n"))


def test_error_scan_on_long_lines_checks_only_around_triggers(monkeypatch):
    monkeypatch.setattr(error_signals, "_WINDOW", 50)
    far = "x" * 300
    assert error_line_numbers(f"ok\n{far} error {far}\n{far}") == [1]
    assert error_line_numbers(f"{far}xerror{far}\nfine") == []


def _key_lines_reference(text: str, prose: bool) -> list[int]:
    """Key lines as the selector defines them: per line, after an optional number prefix."""
    prefix = re.compile("^" + NUMBER_PREFIX)
    key = kept_lines._HEADING if prose else re.compile("^" + kept_lines._DEFINITION, re.VERBOSE)
    out = []
    for i, line in enumerate(text.split("\n")):
        m = prefix.match(line)
        if key.match(line[m.end():] if m else line):
            out.append(i)
    return out


LINE_PIECES = ["  12→", "12:\t", "7\t", " 4: ", "１２→", "1234567890→", "def f", "class", "pub(crate) fn x", "fn", "define",
               "export const a = (", "let q = function", "import", "#include x", "# Head", "## x", "#nope", "public ",
               "   ", "\t", "_def", "x", ":", "→", "\n", "\n", "\n"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(LINE_PIECES), max_size=30).map("".join), st.booleans())
def test_key_lines_found_in_one_pass_are_the_per_line_matches(text, prose):
    pattern = kept_lines._HEADING_LINE if prose else kept_lines._DEFINITION_LINE
    assert kept_lines._line_numbers(pattern.finditer(text), text) == _key_lines_reference(text, prose)


def _thinned_reference(text: str, every: int, min_lines: int) -> tuple[str, int, int] | None:
    """Line-number thinning as its docstring defines it, one `^` scan (re.MULTILINE) per prefix."""
    lines = text.count("\n") + 1
    if lines < min_lines:
        return None
    for body in (r"(\d{1,9})(?:\t|→)", r"(\d{1,9}): "):
        prefix = re.compile(r"^[ \t]{0,12}" + body, re.MULTILINE)
        numbers = [int(n) for n in prefix.findall(text)]
        if body.endswith(": ") and (len(numbers) != len(re.findall(r"^[ \t]{0,12}\d{1,9}:", text, re.MULTILINE))
                                    or not re.search(r"^[ \t]{0,12}\d{1,9}: \S", text, re.MULTILINE)):
            continue
        if numbers and len(numbers) >= MIN_NUMBERED_SHARE * lines and all(b == a + 1 for a, b in zip(numbers, numbers[1:])):
            return _without_numbers(prefix, text, every, numbers[0]), numbers[0], numbers[-1]
    return None


def _without_numbers(prefix: re.Pattern, text: str, every: int, first: int) -> str:
    return prefix.sub(lambda m: m.group(0) if int(m.group(1)) == first or int(m.group(1)) % every == 0 else "", text)


NUMBERED_PIECES = ["  12→", "12\t", " 4: ", "4:", "3: x", "１２→", "007→", "1234567890→", "x", " ", "\t", ":", "→", "é"]


def _numbered_texts(draw: st.DrawFn) -> str:
    """Numbered reads in each host's style, counting up from anywhere, with lines numbered
    twice, unnumbered, re-numbered or broken up by other pieces."""
    start = draw(st.integers(0, 12_000))
    style = draw(st.sampled_from([lambda n: f"{n:>6}→", lambda n: f"{n}\t", lambda n: f"{n}: ", lambda n: f"{n:>4}: ",
                                  lambda n: f"{n}:"]))
    lines = []
    for i in range(draw(st.integers(0, 45))):
        tail = draw(st.lists(st.sampled_from(NUMBERED_PIECES), max_size=3).map("".join))
        lines.append(tail if draw(st.sampled_from(range(16))) == 15 else style(start + i) + tail)
    return "\n".join(lines)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.composite(_numbered_texts)(),
                 st.lists(st.sampled_from([*NUMBERED_PIECES, "\n", "\n", "\n"]), max_size=60).map("".join)),
       st.sampled_from([1, 2, 3, 7, 10, -10, 25]), st.sampled_from([0, 5, 20]))
def test_line_numbers_thinned_and_measured_in_one_scan_are_the_per_line_definitions(text, every, min_lines):
    thinned = thin_line_numbers(text, every, min_lines)
    assert (None if thinned is None else (thinned.text, thinned.first, thinned.last)) == _thinned_reference(
        text, every, min_lines)
    prefixes = re.findall("^" + NUMBER_PREFIX, text, re.MULTILINE)
    assert content_chars(text) == len(text) - sum(map(len, prefixes))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["QUJD", "ZGVm", "+/", "==", "x", " ", "é", "\n", "9"]), max_size=60).map("".join),
       st.integers(1, 40))
def test_base64_prefilter_never_hides_a_match(text, min_chars):
    if base64_pattern(min_chars).search(text):
        assert has_base64_run(text, min_chars)


def test_trim_gives_the_same_output_with_a_cold_or_warm_memo():
    log = "\n".join(f"step {i} ok" if i % 97 else f"step {i} ERROR: disk full" for i in range(3000))
    body = anthropic([("Bash", {"command": "make"}, log)], turns_after=8)
    output_cut.TRIMMED.clear()
    cold = result_texts(run_stage(body, trim_outputs.STAGE, config())[0].body)
    warm = result_texts(run_stage(body, trim_outputs.STAGE, config())[0].body)
    assert cold == warm and len(cold[0]) < len(log)
    assert len(output_cut.TRIMMED) >= 1
