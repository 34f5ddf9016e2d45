"""An epoch trial that would rewrite what the provider could read from its cache is judged after
the run's answer (`compress.session.Session.settle`), and the epoch it finds worth taking sends, from
the next request on, the bytes the same epoch sends when it is judged during the run."""

from __future__ import annotations

from dataclasses import replace
from unittest.mock import patch

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress import plan as plan_module
from compress.pipeline import run
from compress.session import Session
from compress.trial import Trial
from ground.jsonbytes import dumps
from tests.helpers import SMALL_TAIL
from tests.test_session import _openai_big_output_turns

CONFIG = replace(SMALL_TAIL, protect_tail_turns=2, epoch_savings_threshold=10**9, window_epoch_savings=500)
BODY = _openai_big_output_turns(16, big=1)  # the big read leaves the tail long after it arrived


def _session_before_the_trial() -> tuple[Session, CCRStore]:
    session, store = Session.memory(), CCRStore.in_memory()
    for k in (3, 5):  # the big read arrives in the protected tail, whole
        run({**BODY, "messages": BODY["messages"][:k]}, session=session, store=store, config=CONFIG)
    return session, store


def _plans_built(body: dict, session: Session, store: CCRStore):
    built = []
    real = plan_module.Planner.plan

    def counting(self, start, anchor):
        built.append(start)
        return real(self, start, anchor)

    with patch.object(plan_module.Planner, "plan", counting):
        result = run(body, session=session, store=store, config=CONFIG)
    return result, built


def test_the_run_sends_its_own_plan_and_leaves_the_trial_for_after_its_answer():
    session, store = _session_before_the_trial()
    result, built = _plans_built(BODY, session, store)
    assert result.report.mode == "incremental" and len(built) == 1
    assert session.deferred is not None
    session.settle()
    assert session.deferred is None and session.header.prepared.startswith("saves ")
    again = run(BODY, session=session, store=store, config=CONFIG)
    assert again.report.mode == "epoch" and "decided after the previous request" in again.report.epoch_reason
    assert " of 2,000 lines" in dumps(again.body["messages"][4]).decode()


def test_the_epoch_sends_the_bytes_it_sends_when_judged_during_the_run():
    during = _session_before_the_trial()
    with patch.object(Trial, "after_answer", property(lambda self: False)):
        first = run(BODY, session=during[0], store=during[1], config=CONFIG)
        assert first.report.mode == "epoch"
        inline = run(BODY, session=during[0], store=during[1], config=CONFIG)
    after = _session_before_the_trial()
    run(BODY, session=after[0], store=after[1], config=CONFIG)
    after[0].settle()
    deferred = run(BODY, session=after[0], store=after[1], config=CONFIG)
    assert dumps(deferred.body) == dumps(inline.body)
    assert dumps(first.body) == dumps(inline.body)
    keys = [m.key for m in find_markers(dumps(deferred.body["messages"][4]).decode()) if m.key]
    assert keys and all(after[1].get(k).ok for k in keys)  # its originals are in CCR before it is sent


def test_a_face_that_never_settles_gets_the_epoch_one_request_later_all_the_same():
    session, store = _session_before_the_trial()
    run(BODY, session=session, store=store, config=CONFIG)
    again = run(BODY, session=session, store=store, config=CONFIG)  # `run` settles first
    assert again.report.mode == "epoch" and " of 2,000 lines" in dumps(again.body["messages"][4]).decode()


def test_a_trial_that_does_not_pay_changes_nothing_the_next_request_sends():
    strict = replace(CONFIG, window_epoch_savings=10**9)
    session, store = Session.memory(), CCRStore.in_memory()
    for k in (3, 5):
        run({**BODY, "messages": BODY["messages"][:k]}, session=session, store=store, config=strict)
    first = run(BODY, session=session, store=store, config=strict)
    records = dict(session.records)
    session.settle()
    assert session.records == records and not session.header.prepared
    again = run(BODY, session=session, store=store, config=strict)
    assert again.report.mode == "incremental" and dumps(again.body) == dumps(first.body)


def test_a_session_saved_before_the_trial_was_judged_decides_as_one_kept_in_memory(tmp_path):
    """Saving judges the trial first: what is saved, and so the next request's bytes, do not
    depend on whether the process kept the session in memory."""
    kept, store = _session_before_the_trial()
    on_disk = Session.load(tmp_path / "s")
    for k in (3, 5):
        run({**BODY, "messages": BODY["messages"][:k]}, session=on_disk, store=store, config=CONFIG)
    run(BODY, session=on_disk, store=store, config=CONFIG)
    on_disk.save()
    run(BODY, session=kept, store=store, config=CONFIG)
    reloaded = run(BODY, session=Session.load(tmp_path / "s"), store=store, config=CONFIG)
    assert dumps(reloaded.body) == dumps(run(BODY, session=kept, store=store, config=CONFIG).body)
    assert " of 2,000 lines" in dumps(reloaded.body["messages"][4]).decode()
