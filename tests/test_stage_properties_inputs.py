"""Property tests for dedup_tool_calls, purge_errors and supersede_inputs on generated sessions:
pairing intact, never larger, markers resolve exactly, deterministic, idempotent, and the latest
successful change of every file keeps its input until it has settled, but for what is history
once its result arrived (texts an edit replaced, texts the result shows)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from compress.formats.requests import from_provider
from compress.model import index_tool_calls
from compress.stagekit.line_numbers import unnumbered_lines
from compress.stages import dedup_tool_calls, purge_errors, supersede_inputs
from compress.vocab.calls import touched_files
from compress.vocab.signals.errors import is_failed_result
from compress.vocab.tools import OLD_TEXT_KEYS
from compress.vocab.touches import CHANGES, CREATE, DELETE, READ, WRITE, same_file
from tests.chain_checks import BODIES, MEDIUM_CONFIG, check_run, run_stages
from tests.strategies import agent_sessions, requests

STAGES = (dedup_tool_calls.STAGE, purge_errors.STAGE, supersede_inputs.STAGE)


def _changed_inputs_were_stale_or_failed(before: dict, after: dict) -> None:
    old, new = from_provider(before).messages, from_provider(after).messages
    anchor = old[-1].turn if old else 0
    settled_after = supersede_inputs.SupersedeOptions.settled_after_turns
    calls = sorted(index_tool_calls(old).values(), key=lambda c: (c.use_msg, c.use_block))
    ok = [c for c in calls if c.result_msg < 0 or not is_failed_result(old[c.result_msg].blocks[c.result_block])]
    for call in calls:
        use = old[call.use_msg].blocks[call.use_block]
        if use.input == new[call.use_msg].blocks[call.use_block].input:
            continue
        if call not in ok:
            continue  # purge_errors
        changed = [t.path for t in touched_files(use.tool_name, use.input) if t.action in CHANGES]
        later = [(old[c.use_msg].turn, t) for c in ok[ok.index(call) + 1:]
                 for t in touched_files(c.name, old[c.use_msg].blocks[c.use_block].input)]
        # settled: no call touched its files for `settled_after` turns; shown again: each file
        # later read, written whole, re-created or deleted (a later edit alone does not count)
        quiet_since = max([old[call.use_msg].turn, *(turn for turn, t in later if any(same_file(p, t.path) for p in changed))])
        settled = anchor - quiet_since >= settled_after
        shown = all(any(same_file(p, t.path) and t.action in (READ, WRITE, CREATE, DELETE) for _, t in later) for p in changed)
        if not (settled or shown):
            # still current: only the texts the edit replaced may be notes, and only once it succeeded
            assert call.result_msg >= 0
            result = old[call.result_msg].blocks[call.result_block].result_text
            assert _without_history(use.input, result) == _without_history(new[call.use_msg].blocks[call.use_block].input, result)
        assert changed


def _without_history(value, result: str):
    """The input without what is history once `result` arrived: every replaced text
    (`OLD_TEXT_KEYS`, also inside a MultiEdit's edits) and every string whose lines `result`
    shows (numbered or not)."""
    shown = set(unnumbered_lines(result))

    def echoed(text) -> bool:
        lines = [line for line in text.split("\n") if line.strip()] if isinstance(text, str) else []
        return bool(lines) and all(line in shown for line in lines)

    if isinstance(value, dict):
        return {k: _without_history(v, result) for k, v in value.items() if k not in OLD_TEXT_KEYS and not echoed(v)}
    if isinstance(value, list):
        return [_without_history(v, result) for v in value]
    return value


@settings(max_examples=120, deadline=None)
@given(agent_sessions(), st.sampled_from(sorted(BODIES)))
def test_agent_sessions_keep_every_invariant(calls, shape):
    body = BODIES[shape](calls)
    out, _, store = run_stages(body, *STAGES, config=MEDIUM_CONFIG)
    check_run(body, out, store)
    _changed_inputs_were_stale_or_failed(body, out)
    assert run_stages(body, *STAGES, config=MEDIUM_CONFIG)[0] == out  # deterministic
    assert run_stages(out, *STAGES, config=MEDIUM_CONFIG, store=store)[0] == out  # idempotent


def _call(n: int, name: str, tool_input: dict) -> list[dict]:
    return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{n}", "name": name,
                                               "input": tool_input}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": ""}]}]


# Found by hypothesis: a note naming a 420-character CJK file name was larger in bytes than the
# 145-line body it replaced (notes now name at most inputnotes.SHORT_PATH_CHARS of a path).
LONG_NAME = {"model": "m", "max_tokens": 1024, "messages": [
    {"role": "user", "content": ""},
    *_call(1, "Write", {"file_path": "数据库连接失败，请检查配置。" * 30, "pattern": "\n".join(f"{i}: " for i in range(145))}),
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "", "signature": "sig"}]},
    {"role": "user", "content": "next"}, *_call(2, "Read", {})]}


@settings(max_examples=120, deadline=None)
@given(requests)
@example(body=LONG_NAME)
def test_generic_requests_keep_every_invariant(body):
    out, _, store = run_stages(body, *STAGES, config=MEDIUM_CONFIG)
    check_run(body, out, store)
    assert run_stages(out, *STAGES, config=MEDIUM_CONFIG, store=store)[0] == out


@settings(max_examples=60, deadline=None)
@given(agent_sessions(), st.sampled_from(sorted(BODIES)))
def test_the_default_chain_is_idempotent_on_agent_sessions(calls, shape):
    out, _, store = run_stages(BODIES[shape](calls), config=MEDIUM_CONFIG)
    assert run_stages(out, config=MEDIUM_CONFIG, store=store)[0] == out
