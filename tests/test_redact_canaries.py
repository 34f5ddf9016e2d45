"""ground.redact against the canary set (true positives) and ordinary text (false positives),
and against Yelp's detect-secrets on the same canaries (bench/redact_detectors.py has speed)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ground.redact import redact, secret_spans
from tests.reliability.canaries import CANARIES, canary_text, leaked
from tests.reliability.ordinary import generated_near_misses, ordinary_texts
from tests.reliability.tally import record

AWS_DOCUMENTED_EXAMPLE = "AKIAIOSFODNN7EXAMPLE"
"""AWS's own example access key, quoted in ctxmill's docs: the right shape, so it is redacted."""


@pytest.mark.parametrize("canary", CANARIES, ids=lambda c: c.name)
def test_every_canary_is_caught_in_context(canary):
    out = redact(canary.text)
    assert leaked(out) == []
    assert "[REDACTED:" in out


def test_all_canaries_together_leave_nothing_and_keep_the_ordinary_lines():
    text = canary_text()
    out = redact(text)
    record("secrets", "canaries in context in one tool output, through ground.redact", len(CANARIES),
           leaked=len(leaked(out)))
    assert leaked(out) == []
    assert out.count("[REDACTED:") >= len(CANARIES)
    assert "step 4: compiled module_4.py in 0.4s" in out


def test_no_false_positives_on_ordinary_code_and_logs():
    found = [(name, text[s:e]) for name, text in ordinary_texts() for s, e, _ in secret_spans(text)]
    assert [f for f in found if f[1] != AWS_DOCUMENTED_EXAMPLE] == []


@pytest.mark.parametrize("line", [
    "if key == 'password': continue",
    "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}",
    "echo $CR_PAT | docker login ghcr.io -u me --password-stdin",
    "mkdir -p build && cp -pr assets build/ && ssh -p 2222 host",
    "PWD=/home/dev/project",
    "export interface Config { token: string; password?: string }",
    "next_token = response.get('nextToken')",
    "password = get_password()",
])
def test_near_misses_are_left_alone(line):
    assert redact(line) == line


def test_detect_secrets_catches_no_canary_that_ctxmill_misses():
    """The library's rule set (keywords, entropy) is the yardstick: whatever it catches, so must
    we. (It catches 21 of the 86; ctxmill all 86, see docs/reliability.md.)"""
    pytest.importorskip("detect_secrets")
    from bench.redact_detectors import detect_secrets_redactor

    theirs = detect_secrets_redactor()
    caught_by_them = {c.name for c in CANARIES if not leaked(theirs(c.text))}
    assert caught_by_them, "the detect-secrets adapter found nothing: it is broken"
    assert {c.name for c in CANARIES if leaked(redact(c.text))} & caught_by_them == set()


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200), st.sampled_from(CANARIES), st.text(max_size=200))
def test_a_canary_in_any_surroundings_is_caught_and_redaction_is_idempotent(before, canary, after):
    text = before + "\n" + canary.text + "\n" + after
    once = redact(text)
    assert leaked(once) == []
    assert redact(once) == once


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000))
def test_generated_tool_output_is_left_alone(seed):
    text = generated_near_misses(seed, lines=60)
    assert redact(text) == text


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("canary", CANARIES, ids=lambda c: c.name)
def test_every_canary_is_caught_inside_json_strings(canary, depth):
    """Tool output that is JSON holding text (or JSON holding JSON): quotes come escaped."""
    import json

    text = canary.text
    for _ in range(depth):
        text = json.dumps({"output": text})
    assert leaked(redact(text)) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["x", " ", "-", "_", "A", "\u0130", *__import__("ground.redact").redact._TRIGGERS]),
                max_size=120))
def test_the_trigger_scan_finds_every_place_of_every_trigger(pieces):
    """One pass finds every place of every trigger, those starting inside another (nested, or
    running on past it) included. A trigger seen more than DENSE times comes back as None (its
    rules scan everything)."""
    from ground.redact import _TRIGGERS, DENSE, _trigger_hits

    text = "".join(pieces).lower()
    expected: dict[str, list[int]] = {}
    for trigger in _TRIGGERS:
        at = text.find(trigger)
        while at >= 0:
            expected.setdefault(trigger, []).append(at)
            at = text.find(trigger, at + 1)
    hits = _trigger_hits(text)
    assert set(hits) == set(expected)
    for trigger, places in hits.items():
        assert places == expected[trigger] or (places is None and len(expected[trigger]) > DENSE)


@pytest.mark.parametrize("glue", ["ok", "1", "_", "=", ":"])
def test_a_canary_glued_to_the_text_before_it_is_caught(glue):
    """Found by the session property test: `okAuthorization: Basic …` (a line joined to the
    one before it) once escaped the word boundary."""
    assert [c.name for c in CANARIES if leaked(redact(glue + c.text))] == []


def test_a_secret_beside_a_lone_surrogate_is_caught():
    """Text decoded with surrogateescape can hold lone surrogates; the trigger scan reads them as
    U+FFFD, every place unchanged."""
    text = "\udcc2 GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4 + " \udcff"
    out = redact(text)
    assert "ghp_" not in out and out.startswith("\udcc2 GITHUB_TOKEN=[REDACTED:") and out.endswith(" \udcff")
