"""Golden checks of crush_json + trim_outputs on a real Claude Code session from the shared
corpus (skipped when it is absent), read by compress.formats.sessions."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.runner.pipeline import Chain, run
from compress.stages import crush_json, trim_outputs
from compress.state.session import Session
from compress.vocab.signals.errors import first_error_line
from tests.conftest import CORPUS
from tests.stagekit import config, result_texts

pytestmark = pytest.mark.corpus
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from claude_code_requests import session_request  # noqa: E402

SESSION = "claude-code/marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl"


@pytest.fixture(scope="module")
def session_body():
    if not (CORPUS / "transcripts" / SESSION).exists():
        pytest.skip(f"{SESSION} is not in the corpus")
    return session_request(CORPUS / "transcripts" / SESSION)


@pytest.mark.parametrize("tier", ["always", "high"])
def test_real_session_saves_and_every_marker_resolves(session_body, tier):
    before = result_texts(session_body)
    failed = [b.get("is_error", False) for m in session_body["messages"] if isinstance(m["content"], list)
              for b in m["content"] if b.get("type") == "tool_result"]
    store = CCRStore.in_memory()
    result = run(session_body, session=Session.memory(), store=store, config=config(tier),
                 chain=Chain([crush_json.STAGE, trim_outputs.STAGE]))
    report = result.report
    assert not report.error and not report.errors
    # source reads keep 3x (always) / 2x (high) the nominal budgets: agents copy edits out of them
    assert report.tokens_after < {"always": 0.9, "high": 0.8}[tier] * report.tokens_before
    after = result_texts(result.body)
    assert len(after) == len(before)
    changed = 0
    for old, new, is_error in zip(before, after, failed):
        if is_error:  # retention: a failed call's first error line stays visible
            assert (first_error_line(old) or old.strip().split("\n")[0]) in new
        if old != new:
            changed += 1
            markers = find_markers(new)
            assert markers and all(store.get(m.key).text == old for m in markers)
    assert changed >= 10 and any(failed)
