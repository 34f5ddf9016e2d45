"""ground.redact stays linear on adversarial input and finds what its plain definitions find.

The searches that replace a regex which rescans (the assignment rules' overlapped search, the
walk above a key block's END line, the window after a command word) are compared here with
those plain definitions on generated adversarial text; their speed on 1 MB of each shape is
measured in bench/redact_speed.py (tests assert behaviour, never time).
"""

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import ground.redact as engine
from ground.redact import redact
from ground.secret_rules import RULES

PIECES = [
    # names, assignments, quotes, escapes and calls of the assignment rules
    "password", "PWD", "passwd", "_pass", "DB_", "token", "Secret", "credentials", "api_key", "Access-Token",
    "client_secret", "SessionToken", "=", ":", ":=", "::", " = ", ": ", '"', "'", '\\"', "\\\\", "(", "[",
    "$", "<", "/", "true", "abcd", "Zq9x", "AAAA", "hunter22", "x", " ", "\t", "\n", ",", ";", "&",
    # command flags, key blocks, tokens
    "mysql", "mysqldump", " -p", "-pS3cr", "-----END RSA PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----",
    "-----END PGP PRIVATE KEY BLOCK-----", "QUJDRA==", "12→", "  7\t", "3: ", "eyJ", "eyJhbGciOi", ".", "-",
]
texts = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)


def _union(spans):
    merged = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        elif end > start:
            merged.append([start, end])
    return merged


def _rules(search):
    return [rule for rule in RULES if rule.search == search]


def _overlapped_reference(pattern, text):
    """The plain definition: every match at any place (regex's overlapped search), minus
    those whose bare value is followed by `(` or `[`."""
    compiled = regex.compile(pattern, regex.V0)
    return [m.span("secret") for m in compiled.finditer(text, overlapped=True) if m.start("call") < 0]


@settings(max_examples=400, deadline=None)
@given(texts)
def test_assignment_search_finds_what_an_overlapped_search_finds(text):
    for rule in _rules("assignment"):
        found = list(engine._assignment(engine._compiled(rule.pattern), text, 0, len(text)))
        assert _union(found) == _union(_overlapped_reference(rule.pattern, text)), rule.kind


KEY_TAIL_REFERENCE = (
    r"(?m)(?:^(?:[ \t]{0,12}+\d{1,9}+(?:\t|→|:[ \t]))?+[A-Za-z0-9+/=]{4,}+[ \t]*+\n)++"
    r"(?:[ \t]{0,12}+\d{1,9}+(?:\t|→|:[ \t]))?+-----END (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY(?: BLOCK)?-----")
"""The key-tail rule as one regex: right, but it rescans the key lines from every line start
(quadratic on an unterminated block)."""


@settings(max_examples=400, deadline=None)
@given(texts)
def test_key_tail_walk_finds_what_the_regex_finds(text):
    (rule,) = _rules("key_tail")
    found = list(engine._key_tail(engine._compiled(rule.pattern), text, 0, len(text)))
    assert found == [m.span() for m in regex.finditer(KEY_TAIL_REFERENCE, text)]


MYSQL_REFERENCE = (r"(?i)(?:mysql|mysqldump|mysqladmin|mariadb)\b(?:(?!\[REDACTED:)[^\n]){0,200}?[ \t]-p[\"']?+"
                   r"(?P<secret>[^\s\"'\[-][^\s\"']{0,127}+)")
"""The mysql rule with a plain window: right, but every command word rescans 200 characters."""


@settings(max_examples=300, deadline=None)
@given(texts)
def test_command_window_finds_what_a_plain_window_finds(text):
    (rule,) = [r for r in RULES if r.kind == "mysql_password"]
    found = list(engine._plain(engine._compiled(rule.pattern), text, 0, len(text)))
    assert found == [m.span("secret") for m in regex.finditer(MYSQL_REFERENCE, text)]


@settings(max_examples=200, deadline=None)
@given(texts, st.integers(1, 40))
def test_repeated_adversarial_text_is_redacted_deterministically_and_idempotently(text, times):
    text = text * times
    once = redact(text)
    assert redact(text) == once
    assert redact(once) == once


def test_an_unterminated_key_block_is_redacted_to_the_end():
    """The red team's shape: a BEGIN line and key lines without an END line."""
    text = "log line\n-----BEGIN PRIVATE KEY-----\n" + "AAAA\n" * 20_000
    assert redact(text) == "log line\n[REDACTED:private_key]"


def test_key_lines_without_any_end_line_are_left_alone():
    text = "QUJDRA==\n" * 20_000 + "private key rotated"
    assert redact(text) == text


def test_dense_assignments_are_each_redacted():
    text = "pwd=abcd " * 5_000 + "pwd=" * 5_000 + "(x)"
    out = redact(text)
    assert out.startswith("pwd=[REDACTED:password] pwd=[REDACTED:password] ")
    assert out.endswith("pwd=" * 5_000 + "(x)")


def test_every_bench_shape_keeps_its_planted_canary_out_and_is_idempotent():
    """The adversarial shapes of bench/redact_speed.py (which times them at 1 MB), at 20,000
    characters: a canary in the middle is redacted, a second pass changes nothing."""
    from bench.redact_speed import SHAPES
    from tests.reliability.canaries import CANARIES

    canary = next(c for c in CANARIES if c.name == "github_classic")
    for name, make in SHAPES.items():
        text = make(20_000)
        middle = len(text) // 2
        once = redact(text[:middle] + "\n" + canary.text + "\n" + text[middle:])
        assert canary.secret not in once, name
        assert redact(once) == once, name
