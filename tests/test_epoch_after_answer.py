"""A large request's epoch trial that would rewrite what the provider could read from its cache
is judged after the run's answer (`compress.state.session.Session.settle`), and the epoch it finds
worth taking sends, from the next request on, the bytes the same epoch sends when it is judged
during the run; one whose cached request may leave the provider's lookback by the next request
waits too, priced as a rewrite of everything. A small request's trial, or one for a provider that reads any earlier prefix,
is judged at once."""

from __future__ import annotations

import copy
from dataclasses import replace
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.runner import plan as plan_module
from compress.runner import trial as trial_module
from compress.runner.epochs import EpochChoice, pays_off, rewrite_could_pay
from compress.runner.pipeline import run
from compress.runner.trial import Trial
from compress.state.session import Session
from ground.jsonbytes import dumps
from tests.helpers import SMALL_TAIL
from tests.test_session import _big_output_turns, _openai_big_output_turns

CONFIG = replace(SMALL_TAIL, protect_tail_tokens=0, protect_tail_turns=2, epoch_savings_threshold=10**9,
                 window_epoch_savings=500)
SMALL = _big_output_turns(8, big=2)
"""Reads of text files, one of them big: it leaves the protected tail, then a window epoch cuts it."""
LARGE = copy.deepcopy(SMALL)
LARGE["messages"][0]["content"] = "start " + "lorem ipsum dolor " * 14_000  # past trials_after_answer_from
TRIED = 10
"""The request (its message count) whose trial pays: its epoch is first sent with request 11."""


def _request(body: dict, k: int) -> dict:
    return {**body, "messages": copy.deepcopy(body["messages"][:k])}


def _before_the_trial(body: dict = LARGE, config=CONFIG) -> tuple[Session, CCRStore]:
    session, store = Session.memory(), CCRStore.in_memory()
    for k in range(1, TRIED):
        assert run(_request(body, k), session=session, store=store, config=config).report.mode != "epoch" or k == 1
    return session, store


def test_the_run_sends_its_own_plan_and_leaves_the_trial_for_after_its_answer():
    session, store = _before_the_trial()
    built = []
    real = plan_module.Planner.plan

    def counting(self, start, anchor):
        built.append(start)
        return real(self, start, anchor)

    with patch.object(plan_module.Planner, "plan", counting):
        result = run(_request(LARGE, TRIED), session=session, store=store, config=CONFIG)
    assert result.report.tokens_before >= CONFIG.trials_after_answer_from
    assert result.report.mode == "incremental" and len(built) == 1 and session.deferred is not None
    session.settle()
    assert session.deferred is None and session.header.prepared.startswith("saves ")
    after = run(_request(LARGE, TRIED + 1), session=session, store=store, config=CONFIG)
    assert after.report.mode == "epoch" and "decided after the previous request" in after.report.epoch_reason
    assert "2,000 lines" in dumps(after.body["messages"][6]).decode() or "lines omitted" in dumps(
        after.body["messages"][6]).decode()


def test_the_epoch_sends_the_bytes_it_sends_when_judged_during_the_run():
    during = _before_the_trial()
    with patch.object(Trial, "after_answer", property(lambda self: False)):
        assert run(_request(LARGE, TRIED), session=during[0], store=during[1], config=CONFIG).report.mode == "epoch"
        inline = run(_request(LARGE, TRIED + 1), session=during[0], store=during[1], config=CONFIG)
    after = _before_the_trial()
    run(_request(LARGE, TRIED), session=after[0], store=after[1], config=CONFIG)
    after[0].settle()
    deferred = run(_request(LARGE, TRIED + 1), session=after[0], store=after[1], config=CONFIG)
    assert dumps(deferred.body) == dumps(inline.body) != dumps(_request(LARGE, TRIED + 1))
    keys = [m.key for m in find_markers(dumps(deferred.body).decode()) if m.key]
    assert keys and all(after[1].get(k).ok for k in keys)  # its originals are in CCR before it is sent


def test_a_face_that_never_settles_gets_the_epoch_one_request_later_all_the_same():
    session, store = _before_the_trial()
    run(_request(LARGE, TRIED), session=session, store=store, config=CONFIG)
    after = run(_request(LARGE, TRIED + 1), session=session, store=store, config=CONFIG)  # `run` settles first
    assert after.report.mode == "epoch" and "decided after the previous request" in after.report.epoch_reason


def test_a_trial_that_does_not_pay_changes_nothing_the_next_request_sends():
    strict = replace(CONFIG, window_epoch_savings=10**9)
    session, store = _before_the_trial(config=strict)
    first = run(_request(LARGE, TRIED), session=session, store=store, config=strict)
    records = dict(session.records)
    session.settle()
    assert session.records == records and not session.header.prepared
    again = run(_request(LARGE, TRIED), session=session, store=store, config=strict)
    assert again.report.mode == "incremental" and dumps(again.body) == dumps(first.body)


def test_a_session_saved_before_the_trial_was_judged_decides_as_one_kept_in_memory(tmp_path):
    """Saving judges the trial first: what is saved, and so the next request's bytes, do not
    depend on whether the process kept the session in memory."""
    kept, store = _before_the_trial()
    on_disk = Session.load(tmp_path / "s")
    for k in range(1, TRIED + 1):
        run(_request(LARGE, k), session=on_disk, store=store, config=CONFIG)
    on_disk.save()
    run(_request(LARGE, TRIED), session=kept, store=store, config=CONFIG)
    reloaded = run(_request(LARGE, TRIED + 1), session=Session.load(tmp_path / "s"), store=store, config=CONFIG)
    in_memory = run(_request(LARGE, TRIED + 1), session=kept, store=store, config=CONFIG)
    assert reloaded.report.mode == in_memory.report.mode == "epoch"
    assert dumps(reloaded.body) == dumps(in_memory.body)


def test_a_small_request_or_an_openai_one_has_its_trial_judged_at_once():
    openai = _openai_big_output_turns(8, big=2)
    openai["messages"][0]["content"] = LARGE["messages"][0]["content"]
    for body in (SMALL, openai):
        session, store, reasons = Session.memory(), CCRStore.in_memory(), []
        for k in range(1, len(body["messages"]) + 1):
            reasons.append(run(_request(body, k), session=session, store=store, config=CONFIG).report.epoch_reason)
            assert session.deferred is None
        assert any(r.startswith("saves ") and "decided after" not in r for r in reasons)


def test_a_config_that_judges_every_trial_during_the_run_takes_the_epoch_at_once():
    inline = replace(CONFIG, trials_after_answer_from=0)
    session, store = _before_the_trial(config=inline)
    result = run(_request(LARGE, TRIED), session=session, store=store, config=inline)
    assert result.report.mode == "epoch" and session.deferred is None


OUT_OF_REACH = replace(CONFIG, cache_window_blocks=6)
"""A lookback so short that the cached request the trial's epoch starts after would leave it by
the next request (`compress.runner.epochs.in_reach_next_time` is false)."""


def test_a_trial_that_cannot_pay_for_the_rewrite_builds_no_second_plan_and_changes_nothing():
    """Out of reach, the trial is priced as a rewrite of everything up to the last request; when
    even saving every token from its start on would not pay for that (`rewrite_could_pay`), no
    plan of it is built, and the session and the next request are those of judging it."""
    built = []
    real_plan = plan_module.Planner.plan

    def counting(self, start, anchor):
        built.append(start)
        return real_plan(self, start, anchor)

    skipped = _before_the_trial(config=OUT_OF_REACH)
    with patch.object(plan_module.Planner, "plan", counting):
        result = run(_request(LARGE, TRIED), session=skipped[0], store=skipped[1], config=OUT_OF_REACH)
        assert result.report.mode == "incremental" and len(built) == 1 and skipped[0].deferred is None
    judged = _before_the_trial(config=OUT_OF_REACH)
    priced = []
    real_pays = trial_module.pays_off

    def pricing(choice, *args):
        priced.append(choice)
        return real_pays(choice, *args)

    with patch.object(Trial, "could_pay", property(lambda self: True)), patch.object(trial_module, "pays_off", pricing):
        assert dumps(run(_request(LARGE, TRIED), session=judged[0], store=judged[1],
                         config=OUT_OF_REACH).body) == dumps(result.body)
        assert judged[0].deferred is not None
        judged[0].settle()
    assert [c.cached_end for c in priced] == [0] and priced[0].read_end == TRIED - 1
    # priced on the cached request the same trial pays (12,977 tokens saved); on a rewrite it does not
    assert not judged[0].header.prepared and judged[0].records == skipped[0].records
    after = [run(_request(LARGE, TRIED + 1), session=s, store=st, config=OUT_OF_REACH) for s, st in (skipped, judged)]
    assert after[0].report.mode == after[1].report.mode == "incremental"
    assert dumps(after[0].body) == dumps(after[1].body)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5_000), min_size=2, max_size=30), st.data(), st.integers(1, 400),
       st.sampled_from([0.0, 0.25, 1.0]))
def test_a_rewrite_the_bound_rules_out_never_pays_off(current, data, turn, horizon):
    """`rewrite_could_pay` is an upper bound: whatever a trial from `start` on renders (the
    messages before it as they are, the others at any size), it does not pay off as a rewrite."""
    n = len(current)
    start = data.draw(st.integers(0, n - 1))
    read_end = data.draw(st.integers(start, n))
    needed = data.draw(st.integers(0, 20_000))
    trial = current[:start] + data.draw(st.lists(st.integers(0, 5_000), min_size=n - start, max_size=n - start))
    choice = EpochChoice(start, needed, 0, read_end, 0)
    config = replace(CONFIG, epoch_horizon=horizon)
    if not rewrite_could_pay(choice, current, turn, config):
        assert not pays_off(choice, current, trial, turn, config)


def test_an_out_of_reach_epoch_that_pays_for_the_rewrite_sends_the_bytes_it_sends_when_judged_during_the_run():
    paying = replace(OUT_OF_REACH, epoch_horizon=50.0)
    during = _before_the_trial(config=paying)
    with patch.object(Trial, "after_answer", property(lambda self: False)):
        assert run(_request(LARGE, TRIED), session=during[0], store=during[1], config=paying).report.mode == "epoch"
        inline = run(_request(LARGE, TRIED + 1), session=during[0], store=during[1], config=paying)
    after = _before_the_trial(config=paying)
    assert run(_request(LARGE, TRIED), session=after[0], store=after[1], config=paying).report.mode == "incremental"
    after[0].settle()
    deferred = run(_request(LARGE, TRIED + 1), session=after[0], store=after[1], config=paying)
    assert deferred.report.mode == "epoch"
    assert dumps(deferred.body) == dumps(inline.body) != dumps(_request(LARGE, TRIED + 1))
