import sqlite3
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ccr.keys import make_key
from ccr.store import DAY, CCRError, CCRStore, Retention, db_path
from tests.redis_fixture import fresh_address

HOUR = 3600.0


class FakeClock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture(scope="session", params=["sqlite", "redis"])
def backend(request):
    """Opens a new, empty store of each backend (the checks of `ccr.base` hold for both)."""
    if request.param == "sqlite":
        return CCRStore.in_memory
    from ccr.redis_store import RedisCCRStore
    from ground.redis_client import connect

    server = request.getfixturevalue("redis_server")

    def open_redis(**options):
        address = fresh_address(server)
        return RedisCCRStore(connect(address), address.prefix, key=address.key, **options)
    return open_redis


@pytest.fixture
def store(clock, backend):
    with backend(clock=clock) as s:
        yield s


def test_put_then_get_returns_the_exact_text(store):
    text = "line 1\r\nzweite Zeile\n中文\t\udc80 end"
    key = store.put(text)
    assert key == make_key(text)
    found = store.get(key)
    assert (found.status, found.text, found.message, found.ok) == ("ok", text, "", True)


def test_put_is_idempotent(store):
    assert store.put("same") == store.put("same", hint="re-run `x`")
    assert store.stats().entries == 1


@pytest.mark.parametrize("bad", ["../../etc/passwd", "", make_key("x").upper(), make_key("x")[:31], None])
def test_invalid_keys_give_a_message_not_an_exception(store, bad):
    found = store.get(bad)
    assert found.status == "invalid" and found.text is None
    assert "not a CCR key" in found.message and "\n" not in found.message


def test_unknown_key_is_missing(store):
    found = store.get(make_key("never stored"))
    assert found.status == "missing"
    assert found.message.startswith(f'ctxmill: deep_expand("{make_key("never stored")}") is not in this store')


def test_ttl_is_refreshed_by_reads_and_expiry_names_what_to_rerun(store, clock):
    key = store.put("x" * 100, hint="re-run the tool call `cat src/x.py`")
    clock.advance(20 * HOUR)
    assert store.get(key).ok
    clock.advance(20 * HOUR)  # 40 h after the put, 20 h after the read
    assert store.get(key).ok
    clock.advance(26 * HOUR)
    found = store.get(key)
    assert found.status == "expired" and found.text is None
    assert found.message == (
        f'ctxmill: deep_expand("{key}") has expired (stored 66 h ago, kept 24 h); '
        "re-run the tool call `cat src/x.py` to see it again"
    )


def test_expired_entries_become_tombstones_that_keep_the_hint(store, clock):
    key = store.put("old", hint="re-run `make test`")
    store.put("old", hint=None)  # a later put without hint keeps the first hint
    clock.advance(25 * HOUR)
    store.put("new")  # any write sweeps expired entries
    stats = store.stats()
    assert (stats.entries, stats.tombstones, stats.live_bytes) == (1, 1, len("new"))
    assert "re-run `make test` to see it again" in store.get(key).message


def test_tombstones_are_pruned_and_then_the_key_is_missing(clock, backend):
    store = backend(clock=clock, tombstone_seconds=30 * DAY)
    key = store.put("old")
    clock.advance(2 * DAY)
    store.put("sweep 1")
    assert store.get(key).status == "expired"
    clock.advance(31 * DAY)
    store.put("sweep 2")
    assert store.get(key).status == "missing"
    assert store.stats().tombstones == 1  # "sweep 1" expired meanwhile


def test_putting_expired_text_again_revives_it(store, clock):
    key = store.put("again")
    clock.advance(2 * DAY)
    store.put("sweep")
    assert store.get(key).status == "expired"
    assert store.put("again") == key
    assert store.get(key).text == "again"


def test_least_recently_used_is_evicted_at_the_size_cap(clock, backend):
    store = backend(clock=clock, retention=Retention(max_bytes=1000))
    keys = []
    for i in range(3):
        keys.append(store.put(f"{i}" * 300, hint=f"re-run `gen {i}`"))
        clock.advance(60)
    assert store.get(keys[0]).ok  # now keys[1] is the least recently used
    clock.advance(60)
    newest = store.put("n" * 300)
    assert store.get(keys[1]).status == "expired"
    assert "was evicted to keep the store under 1000 bytes" in store.get(keys[1]).message
    assert "re-run `gen 1` to see it again" in store.get(keys[1]).message
    assert all(store.get(k).ok for k in (keys[0], keys[2], newest))
    assert store.stats().live_bytes == 900


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 400), st.booleans()), min_size=1, max_size=30))
def test_live_bytes_stay_under_the_cap_and_match_the_entries(backend, operations):
    clock = FakeClock()
    store = backend(clock=clock, retention=Retention(max_bytes=1000))
    kept = {}
    for i, (size, read_back) in enumerate(operations):
        text = chr(0x41 + i % 26) * size + str(i)
        kept[store.put(text)] = text
        clock.advance(1)
        if read_back:
            assert store.get(make_key(text)).text == text  # the newest put always survives
    live = {k: t for k, t in kept.items() if store.get(k).ok}
    stats = store.stats()
    assert stats.live_bytes == sum(len(t.encode()) for t in live.values()) <= 1000
    assert stats.entries == len(live)


def test_batch_commits_all_puts_together_on_exit(tmp_path):
    with CCRStore(tmp_path) as writer, CCRStore(tmp_path) as other:
        with writer.batch():
            keys = [writer.put(f"text {i}") for i in range(5)]
            assert writer.get(keys[0]).text == "text 0"  # visible to its own batch
            assert other.get(keys[0]).status == "missing"  # not committed yet
        assert [other.get(k).text for k in keys] == [f"text {i}" for i in range(5)]


def test_batch_discards_puts_when_the_block_raises(store):
    with pytest.raises(RuntimeError):
        with store.batch():
            key = store.put("discarded")
            raise RuntimeError("pipeline failed")
    assert store.get(key).status == "missing"


def test_failed_batch_commit_raises_and_stores_nothing(tmp_path):
    store = CCRStore(tmp_path)
    saboteur = sqlite3.connect(db_path(tmp_path))
    saboteur.execute(
        "CREATE TRIGGER fail BEFORE INSERT ON entries WHEN NEW.hint = 'boom' "
        "BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
    )
    saboteur.commit()
    with pytest.raises(CCRError, match="disk on fire"):
        with store.batch():
            good = store.put("good")
            store.put("bad", hint="boom")
    assert store.get(good).status == "missing"
    assert store.stats().live_bytes == 0
    assert store.get(store.put("later")).ok  # the failed transaction was rolled back


def test_nested_batches_commit_once_with_the_outer_one(tmp_path):
    with CCRStore(tmp_path) as writer, CCRStore(tmp_path) as other:
        with writer.batch():
            with writer.batch():
                key = writer.put("inner")
            assert other.get(key).status == "missing"
        assert other.get(key).ok


def test_files_are_private(tmp_path):
    home = tmp_path / "home" / "ccr"
    CCRStore(home).put("secret")
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for name in ("ccr.sqlite3", "ccr.sqlite3-wal", "ccr.sqlite3-shm"):
        assert stat.S_IMODE((home / name).stat().st_mode) == 0o600, name


def test_data_survives_reopening(tmp_path):
    key = CCRStore(tmp_path).put("persisted", hint="re-run `x`")
    assert CCRStore(tmp_path).get(key).text == "persisted"


def test_unopenable_store_raises_ccr_error(tmp_path):
    (tmp_path / "ccr.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(CCRError):
        CCRStore(tmp_path)
