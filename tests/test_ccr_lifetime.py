"""CCR entries live as long as a session still sends their markers, and a commit never evicts
what it just wrote, however large the batch."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ccr.markers import find_markers
from ccr.store import DAY, CCRStore, Retention
from compress.runner.pipeline import run
from compress.state.session import Session
from ground.jsonbytes import dumps
from tests.chain_checks import OPEN_CONFIG, anthropic_body
from tests.test_ccr_store import HOUR, FakeClock


def keys_in(body) -> list[str]:
    return [m.key for m in find_markers(dumps(body).decode())]


class CountingStore(CCRStore):
    refreshes = 0

    def refresh(self, keys):
        CountingStore.refreshes += 1
        return super().refresh(keys)


def conversation(turns: int) -> dict:
    calls = [("Bash", {"command": f"make target{i}"}, "\n".join(f"compiling unit {j} of target{i}" for j in range(400)))
             for i in range(turns)]
    return anthropic_body(calls)


class NeverRefreshing(CCRStore):
    def refresh_due(self, since):
        return False


def live_session(store, clock) -> list[str]:
    """Ten requests 20 hours apart (each run writes, and a write sweeps expired entries);
    returns the keys the first request's markers name, which every later request still sends."""
    session = Session.memory()
    old_keys = keys_in(run(conversation(3), session=session, store=store, config=OPEN_CONFIG).body)
    assert old_keys
    for turn in range(4, 13):
        clock.advance(20 * HOUR)
        result = run(conversation(turn), session=session, store=store, config=OPEN_CONFIG)
        assert result.report.mode == "incremental" and set(old_keys) <= set(keys_in(result.body))
    return old_keys


def test_markers_of_an_old_epoch_stay_alive_while_the_session_sends_them(tmp_path):
    clock = FakeClock()
    CountingStore.refreshes = 0
    store = CountingStore(tmp_path / "ccr", clock=clock)
    old_keys = live_session(store, clock)
    assert [store.get(k).status for k in old_keys] == ["ok"] * len(old_keys)
    assert CountingStore.refreshes == 10  # one per request: they are 20 h apart, more than 6 h
    clock.advance(2 * DAY)  # the session stopped: its entries expire as before
    store.put("anything")  # a write sweeps
    assert store.get(old_keys[0]).status == "expired"
    store.close()


def test_without_the_refresh_they_expired_under_the_live_session(tmp_path):
    clock = FakeClock()
    store = NeverRefreshing(tmp_path / "ccr", clock=clock)
    old_keys = live_session(store, clock)
    assert {store.get(k).status for k in old_keys} == {"expired"}
    store.close()


def test_a_refresh_writes_at_most_once_per_quarter_ttl(tmp_path):
    clock = FakeClock()
    CountingStore.refreshes = 0
    store = CountingStore(tmp_path / "ccr", clock=clock)
    session = Session.memory()
    for turn in range(3, 15):  # twelve requests ten minutes apart
        run(conversation(turn), session=session, store=store, config=OPEN_CONFIG)
        clock.advance(600)
    assert CountingStore.refreshes == 1  # the first request; the next is due 6 h later
    store.close()


def test_the_refresh_time_survives_a_reload(tmp_path):
    clock = FakeClock()
    store = CCRStore(tmp_path / "ccr", clock=clock)
    with Session.open(tmp_path / "s") as session:
        run(conversation(3), session=session, store=store, config=OPEN_CONFIG)
    assert Session.load(tmp_path / "s").header.touched_at == clock.now
    store.close()


def test_a_batch_larger_than_the_cap_keeps_all_its_entries_and_evicts_older_ones_first():
    clock = FakeClock()
    store = CCRStore.in_memory(clock=clock, retention=Retention(max_bytes=1000))
    old = store.put("o" * 300)
    clock.advance(1)
    with store.batch():
        new = [store.put(str(i) * 400) for i in range(5)]  # 2,000 bytes in one commit
    assert all(store.get(k).ok for k in new)
    assert store.get(old).status == "expired" and "evicted" in store.get(old).message
    clock.advance(1)
    later = store.put("z" * 500)  # the next commit brings the store back under its cap
    assert store.get(later).ok and store.stats().live_bytes <= 1000


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(1, 700), min_size=1, max_size=6), min_size=1, max_size=8))
def test_every_commit_keeps_what_it_wrote(batches):
    clock = FakeClock()
    store = CCRStore.in_memory(clock=clock, retention=Retention(max_bytes=1000))
    for n, sizes in enumerate(batches):
        clock.advance(1)
        with store.batch():
            keys = [store.put(f"{n}:{i}:" + "x" * size) for i, size in enumerate(sizes)]
        assert all(store.get(k).ok for k in keys)
        live = store.stats().live_bytes
        assert live <= max(1000, sum(len(f"{n}:{i}:") + s for i, s in enumerate(sizes)))
