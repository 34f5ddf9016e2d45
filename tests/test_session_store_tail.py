"""A replica that keeps a session in memory reads only what another replica appended to its state
in Redis (`RedisState.read_since`, `Session.load(place, held)`): the same state and the same bytes
as a whole reload, one round trip, and every appended line checked as a whole reload checks it."""

from __future__ import annotations

import copy
import uuid
from dataclasses import asdict, replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccr.store import CCRStore
from compress.runner.pipeline import run
from compress.state.session import Record, Session
from ground.jsonbytes import dumps
from tests.helpers import SMALL_TAIL
from tests.test_session import _reminder_turns
from tests.test_session_redis import _round_trips, place  # noqa: F401 - the fixture: a RedisState per name


def _state(session: Session) -> tuple:
    """What a session holds that decides its next request's bytes (renderings by their at-rest form)."""
    records = [(h, r.raw_tokens, r.out_tokens, r.compressible, r.settled, r.keys, r.sealed)
               for h, r in session.records.items()]
    return asdict(session.header), records, session.request_ends


def _held_by(mine) -> Session:
    """A session `mine` loaded and wrote (as a worker holds it between runs)."""
    with mine.lock():
        held = Session.load(mine)
        run(_reminder_turns(4), session=held, store=CCRStore.in_memory(), config=SMALL_TAIL)
        held.save()
    return held


def _caught_up(mine, held: Session) -> Session:
    with mine.lock():
        assert held.changed_on_disk()
        return Session.load(mine, held)


def test_two_replicas_taking_turns_render_as_with_whole_reloads(place):
    """Replica A keeps the session in memory, replica B loads it whole for each of its requests;
    A's caught-up session holds the same state as a whole load, and renders the same bytes."""
    body = _reminder_turns(10)
    config = replace(SMALL_TAIL, epoch_savings_threshold=400)
    store = CCRStore.in_memory()
    mine, held, tails = place(), None, 0
    for k in range(1, len(body["messages"]) + 1):
        request = {**body, "messages": copy.deepcopy(body["messages"][:k])}
        if k % 2:  # replica B
            with Session.open(place()) as theirs:
                run(request, session=theirs, store=store, config=config)
            continue
        with mine.lock():
            session = Session.load(mine, held)
            whole = Session.load(place())
            assert _state(session) == _state(whole)
            tails += held is not None and session is held
            expected = run(copy.deepcopy(request), session=whole, store=store, config=config)
            result = run(request, session=session, store=store, config=config)
            assert dumps(result.body) == dumps(expected.body)
            session.save()
            held = session
    assert tails >= 3  # most of A's reloads read only what B appended


def test_appends_since_the_last_read_are_read_in_one_round_trip(place, monkeypatch):
    """Take (with the write counter), the bytes from the last known line on, write, give back:
    several writes by another replica in between (a counter gap) change nothing."""
    mine = place()
    held = _held_by(mine)
    with Session.open(place()) as theirs:
        theirs.set_next_trial(4)
    assert _caught_up(mine, held) is held  # the scripts are loaded in Redis now (as on a running replica)
    for n in (5, 6, 7):
        with Session.open(place()) as theirs:
            theirs.set_next_trial(n)
    sent = _round_trips(monkeypatch, mine._redis)
    with mine.lock():
        session = Session.load(mine, held)
        session.set_touched(42.0)
        session.save()
    assert sent == ["EVALSHA"] * 4  # take, the tail (no MGET of the whole state), write, give back
    assert session is held and session.header.next_trial_at == 7
    assert mine._redis.ttl(mine._rewritten) > 0  # the rewrite count expires with the state
    assert _state(session) == _state(Session.load(place()))


def test_a_tampered_or_unsigned_appended_line_is_rejected(place):
    mine = place()
    held = _held_by(mine)
    before = held.header.next_trial_at
    with Session.open(place()) as theirs:
        theirs.set_next_trial(5)
        theirs.set_touched(99.0)
    stored = mine._redis.get(mine._data)
    assert stored.count(b'"next_trial_at":5') == 1
    mine._redis.set(mine._data, stored.replace(b'"next_trial_at":5', b'"next_trial_at":6')
                    + b'{"next_trial_at":8}\n')  # a co-tenant: one line changed, one added unsigned
    mine.take_rejected()
    session = _caught_up(mine, held)
    assert session is held  # only the appended bytes were read
    assert mine.take_rejected() == 2
    assert session.header.next_trial_at == before and session.header.touched_at == 99.0
    assert _state(session) == _state(Session.load(place()))


def test_a_rewrite_by_another_replica_is_read_whole(place):
    mine = place()
    held = _held_by(mine)
    with Session.open(place()) as theirs:  # an epoch: the state is replaced
        theirs.start_epoch(theirs.header.provider, 0, 0, dict(list(theirs.records.items())[:2]))
    session = _caught_up(mine, held)
    assert session is not held and len(session.records) == 2
    assert _state(session) == _state(Session.load(place()))


def test_a_change_where_the_known_state_ended_is_read_whole(place):
    """A co-tenant changed the last line this replica had read (or the state is not the one it
    knew): the overlap does not match, so the whole state is read, and checked."""
    mine = place()
    held = _held_by(mine)
    last = mine._redis.get(mine._data).rsplit(b"\n", 2)[-2]
    with Session.open(place()) as theirs:
        theirs.set_next_trial(5)
    stored = mine._redis.get(mine._data)
    mine._redis.set(mine._data, stored.replace(last, last[:-3] + b"AAA"))
    mine.take_rejected()
    session = _caught_up(mine, held)
    assert session is not held and mine.take_rejected() == 1
    assert session.header.next_trial_at == 5
    assert _state(session) == _state(Session.load(place()))


def test_a_session_holding_a_record_it_could_not_write_is_read_whole(place):
    """A record whose rendering cannot be sealed is in memory, not in Redis: adding the appended
    lines to it would hold more than a whole load, so the whole state is read."""
    mine = place()
    held = _held_by(mine)
    assert held._whole
    record = next(iter(held.records.values()))
    with mine.lock():
        held.add("unsealable", replace(record, rendered={"x": 1}, source=None, sealed=None))
        held.save()
    assert not held._whole
    with Session.open(place()) as theirs:
        theirs.set_next_trial(5)
    session = _caught_up(mine, held)
    assert session is not held and "unsealable" not in session.records


def test_a_rewrite_that_ends_with_the_same_line_is_still_read_whole(place):
    """Another replica rewrote the state into bytes of the same length whose line at the known
    end is the same (only the header changed) and appended a line: the rewrite count says so."""
    mine = place()
    held = _held_by(mine)
    other = place()
    data, _ = other.read()
    epoch = held.header.epoch
    assert 0 < epoch < 9 and data.count(b'"epoch":%d' % epoch) == 1
    with other.lock():
        other.rewrite(data.replace(b'"epoch":%d' % epoch, b'"epoch":%d' % (epoch + 1)) + b'{"next_trial_at":9}\n')
    session = _caught_up(mine, held)
    assert session is not held and session.header.epoch == epoch + 1 and session.header.next_trial_at == 9
    assert _state(session) == _state(Session.load(place()))


_STEPS = st.lists(st.tuples(st.sampled_from("AB"), st.sampled_from(["trial", "touch", "end", "forget", "record", "epoch"]),
                            st.integers(1, 50)), min_size=1, max_size=12)


def _change(session: Session, what: str, n: int) -> None:
    if what == "trial":
        session.set_next_trial(n)
    elif what == "touch":
        session.set_touched(float(n))
    elif what == "end":
        session.add_request_end(n)
    elif what == "forget":
        session.forget_request_ends_after(n)
    elif what == "record":
        sealed = next(iter(session.records.values())).sealed if session.records else None
        session.add(f"h{n}", Record(None, n, n, 0, True, sealed=sealed or {"d": []}))
    else:
        session.start_epoch(session.header.provider, 0, 0, dict(list(session.records.items())[:n % 4]))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_STEPS)
def test_any_interleaving_of_two_replicas_holds_the_state_of_a_whole_load(place, steps):
    """Replica A keeps its session in memory, replica B loads it whole; whatever each writes
    (appends, records, epochs), A's session after catching up is what a whole load holds."""
    name = uuid.uuid4().hex
    mine = place(name)
    held = _held_by(mine)
    for actor, what, n in steps:
        if actor == "B":
            with Session.open(place(name)) as theirs:
                _change(theirs, what, n)
            continue
        with mine.lock():
            session = Session.load(mine, held)
            assert _state(session) == _state(Session.load(place(name)))
            _change(session, what, n)
            session.save()
            held = session
    with mine.lock():
        assert _state(Session.load(mine, held)) == _state(Session.load(place(name)))
