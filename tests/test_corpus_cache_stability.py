"""Cache stability on real sessions: replayed call by call through one session, compressed
request k is a byte prefix of request k+1 (apart from new messages) between epochs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.formats.sessions import read_session
from compress.runner.pipeline import run
from compress.state.session import Session
from ground.jsonbytes import dumps
from tests.helpers import conversation_field

SESSIONS = [
    "claude-code/marot__spotter__subagent.jsonl",
    "claude-code/SublyFi__privacy-x402__claude-session.jsonl",
    "claude-code/marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "codex/Sarthib7__FundWise__codex-session.jsonl",
    "swe-agent/replay__marshmallow-code__marshmallow-1867__function_calling__install-1__marshmallow-code__marshmallow-1867.traj",
]


@pytest.mark.corpus
@pytest.mark.parametrize("name", SESSIONS)
@pytest.mark.parametrize("config", [CompressConfig(), replace(CompressConfig(), protect_tail_tokens=500,
                                                              epoch_savings_threshold=2_000)],
                         ids=["defaults", "eager"])
def test_real_session_prefix_is_stable_between_epochs(corpus, name, config):
    transcript = read_session(corpus / "transcripts" / name)
    session, store = Session.memory(), CCRStore.in_memory()
    previous: list[bytes] | None = None
    epochs = 0
    for k in range(len(transcript.calls)):
        result = run(transcript.request(k), session=session, store=store, config=config)
        assert not result.report.error
        out = [dumps(m) for m in result.body[conversation_field(result.body)]]
        if result.report.mode == "epoch":
            epochs += 1
        elif previous is not None:
            assert out[: len(previous)] == previous, f"call {k} rewrote history outside an epoch"
        previous = out
    assert epochs >= 1 and epochs < max(2, len(transcript.calls) // 3)
