"""Golden and retention tests of dedup_tool_calls, purge_errors and supersede_inputs on real
Claude Code sessions from ../shared/corpus (skipped when it is absent)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from bench.claude_code_requests import claude_code_sessions
from bench.claude_code_requests import session_request as load_request
from ccr.markers import find_markers
from compress.formats.requests import from_provider
from compress.model import TOOL_RESULT
from compress.stages import dedup_tool_calls, purge_errors, supersede_inputs
from compress.tiers import TierThresholds
from compress.vocab.signals.errors import first_error_line, is_failed_result
from tests.chain_checks import MEDIUM_CONFIG, check_run, run_stages

pytestmark = pytest.mark.corpus
STAGES = (dedup_tool_calls.STAGE, purge_errors.STAGE, supersede_inputs.STAGE)
SESSIONS = claude_code_sessions()
GOLDEN_SESSION = "marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"  # MIT, sanitised by its author
HIGH_CONFIG = replace(MEDIUM_CONFIG, tiers=TierThresholds(medium=1, high=1))
"""As MEDIUM_CONFIG, at the high tier whatever the size."""


def _session(name: str):
    found = [p for p in SESSIONS if p.name == name]
    if not found:
        pytest.skip(f"{name} is not in the corpus")
    return found[0]


def _summaries(before: dict, after: dict) -> list[tuple[int, str, str]]:
    out = []
    for i, (a, b) in enumerate(zip(before["messages"], after["messages"])):
        for x, y in zip(a["content"], b["content"]):
            if x is not y:
                text = y.get("content") if x["type"] == "tool_result" else json.dumps(y["input"], ensure_ascii=False)
                text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
                out += [(i, x.get("name", x["type"]), m.summary) for m in find_markers(text.replace('\\"', '"'))]
    return out


def test_golden_excerpt():
    """The first 120 messages of a real session: which results and inputs change, and how. Under
    real pressure (the high tier) bodies the agent has left alone settle; below it only bodies a
    later message shows again are cut (a body no later message shows is the agent's only copy)."""
    body = load_request(_session(GOLDEN_SESSION), max_messages=120)
    out, report, store = run_stages(body, *STAGES, config=MEDIUM_CONFIG)
    replaced = "this edit replaced it, the file no longer holds it"
    assert _summaries(body, out) == [
        (6, "tool_result", "same output as the call at turn 21"),
        (10, "tool_result", "same output as the call at turn 24"),
        (39, "ExitPlanMode", "75-line plan stored; the result of this call shows every line of it"),
        (45, "Edit", f"31-line old_string of …/spotter/services/transcript_renderer.ex stored; {replaced}"),
        (99, "Edit", f"50-line old_string of …/spotter_web/live/session_live.ex stored; {replaced}"),
        (101, "Edit", "29-line new_string of …/spotter_web/live/session_live.ex stored; the file was re-read at turn 52"),
        (105, "Edit", f"27-line old_string of …/spotter_web/live/session_live.ex stored; {replaced}"),
    ]
    assert check_run(body, out, store) == 7
    out, report, store = run_stages(body, *STAGES, config=HIGH_CONFIG)
    settled = "no later change to the file"
    assert _summaries(body, out) == [
        (6, "tool_result", "same output as the call at turn 21"),
        (10, "tool_result", "same output as the call at turn 24"),
        (37, "Write", f"75-line body of …/.claude/plans/drifting-tumbling-whisper.md stored; written at turn 19, {settled}"),
        # the approval quotes the plan whole: the call's copy is history at birth
        (39, "ExitPlanMode", "75-line plan stored; the result of this call shows every line of it"),
        # settled once the file was left alone (its edit at turn 23 and nothing after), not when edited again
        (43, "Write", "473-line body of …/spotter/services/transcript_renderer.ex stored; written at turn 22"),
        (45, "Edit", "31-line old_string stored"),
        (45, "Edit", f"35-line new_string of …/spotter/services/transcript_renderer.ex stored; edit made at turn 23, {settled}"),
        # a read of 10 of its lines (turn 28) does not show it again: it settles instead
        (49, "Edit", "380-line new_string of …/spotter/services/transcript_renderer_test.exs stored; edit made at turn 25"),
        (89, "Write", f"170-line body of …/static/assets/spotter.css stored; written at turn 45, {settled}"),
        # a read of 30 lines (turn 52) shows the edit at turn 51 again, not those at turns 47 and 50
        (99, "Edit", "50-line old_string of …/spotter_web/live/session_live.ex stored; this edit replaced it, "
                     "the file no longer holds it"),
        (101, "Edit", "29-line new_string of …/spotter_web/live/session_live.ex stored; the file was re-read at turn 52"),
        # turn 53's edit is recent: only the text it replaced is history
        (105, "Edit", "27-line old_string of …/spotter_web/live/session_live.ex stored; this edit replaced it, "
                      "the file no longer holds it"),
    ]
    assert check_run(body, out, store) == 12
    assert report.tokens_after < 0.9 * report.tokens_before


@pytest.mark.parametrize("name", [p.name for p in SESSIONS if p.stat().st_size > 200_000] or ["absent"])
def test_whole_sessions_keep_invariants_and_error_lines(name):
    body = load_request(_session(name))
    out, _, store = run_stages(body, *STAGES, config=MEDIUM_CONFIG)
    check_run(body, out, store)
    assert run_stages(out, *STAGES, config=MEDIUM_CONFIG, store=store)[0] == out
    rendered = json.dumps(out, ensure_ascii=False)
    old, new = from_provider(body).messages, from_provider(out).messages
    for a, b in zip(old, new):
        for x, y in zip(a.blocks, b.blocks):
            if x.kind != TOOL_RESULT or not is_failed_result(x) or not (line := first_error_line(x.result_text)):
                continue
            line = line[:purge_errors.ERROR_LINE_MAX]
            pointer = any(m.summary.startswith("same output as") for m in find_markers(y.result_text))
            assert line in y.result_text or (pointer and json.dumps(line, ensure_ascii=False)[1:-1] in rendered)
