"""Session state in Redis: the same bytes as the files, the same renderings, a lock with a lease."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from ccr.store import CCRStore
from compress.runner.pipeline import run
from compress.state.session import Session
from compress.state.session_store import RedisState, StateBusy
from ground.jsonbytes import dumps
from ground.redact import secret_spans
from ground.redis_client import connect
from tests.helpers import SMALL_TAIL
from tests.redis_fixture import fresh_address
from tests.test_session import _Memory, _reminder_turns, feed


@pytest.fixture
def place(redis_server):
    address = fresh_address(redis_server)
    client = connect(address)
    yield lambda name="s", **options: RedisState(client, address.prefix, name, key=address.key, **options)
    client.close()


def test_a_session_reloaded_from_redis_each_turn_renders_as_one_kept_in_memory(place, tmp_path):
    body = _reminder_turns(8)
    config = replace(SMALL_TAIL, epoch_savings_threshold=400)
    in_memory = [dumps(r.body) for _, r in feed(body, config, _Memory())]
    in_redis = [dumps(r.body) for _, r in feed(body, config, lambda: Session.open(place()))]
    in_files = [dumps(r.body) for _, r in feed(body, config, lambda: Session.open(tmp_path / "s"))]
    assert in_redis == in_memory == in_files
    stored, _ = place().read()
    # the same format, byte for byte after the header (whose refresh time is the clock's)
    assert stored.split(b"\n")[1:] == (tmp_path / "s" / "state.jsonl").read_bytes().split(b"\n")[1:]


def test_redis_holds_no_secret_the_client_sent(place):
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    body = _reminder_turns(6)
    body["messages"][2]["content"][0]["content"] = f"token={secret}\n" + "".join(f"log line {i}\n" for i in range(400))
    with Session.open(place()) as session:
        run(body, session=session, store=CCRStore.in_memory(), config=SMALL_TAIL)
    stored, _ = place().read()
    assert b"REDACTED" in stored  # a rendering that kept the secret was stored, sealed
    assert secret_spans(stored.decode(), (), ()) == [] and secret.encode() not in stored


def test_another_process_writing_the_state_is_seen(place):
    mine = Session.load(place())
    with place().lock():
        run(_reminder_turns(4), session=mine, store=CCRStore.in_memory(), config=SMALL_TAIL)
        mine.save()
    assert not mine.changed_on_disk()
    with Session.open(place()) as theirs:
        theirs.set_next_trial(123)
    assert mine.changed_on_disk()
    assert Session.load(place()).header.next_trial_at == 123


def test_the_lock_is_exclusive_and_a_dead_holders_lease_expires(place):
    held = place(lease=1.0).lock()
    held.__enter__()  # a replica takes the lock and dies: it never releases it
    with pytest.raises(StateBusy):
        with place(lease=0.5, wait=0.2).lock():
            pass
    started = time.monotonic()
    with place(lease=0.5, wait=5).lock():  # the dead holder's lease (1 s) runs out first
        waited = time.monotonic() - started
    assert 0.3 < waited < 5  # after the lease, not by giving up (a busy machine may add some)


def test_runs_of_one_session_take_turns(place):
    order: list[str] = []

    def worker(name: str) -> None:
        with place().lock():
            order.append(f"{name} in")
            time.sleep(0.05)
            order.append(f"{name} out")

    threads = [threading.Thread(target=worker, args=(str(i),)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(order) == 8
    assert all(order[i].split()[0] == order[i + 1].split()[0] for i in range(0, 8, 2))


def test_a_lock_key_without_a_lease_does_not_hold_the_session(place):
    """No ctxmill process sets a lock without a lease: one found there (garbage, another program,
    an old crash) would otherwise block every request of its session for its whole wait."""
    stuck = place()
    stuck._redis.set(stuck._lock, b"left-behind")  # no TTL
    with place(wait=0.5).lock():  # taken, not waited for
        assert stuck._redis.pttl(stuck._lock) > 0  # now under a lease of its own


def test_a_lock_left_by_a_hang_is_given_back_when_redis_answers_again(tmp_path):
    """Redis hangs (SIGSTOP) while a replica asks for a session's lock: the replica gives up after
    its client's timeout, but the command is in Redis's queue and takes the lock when Redis
    resumes. The replica gives it back as soon as Redis answers, not after its lease, so the
    session's next request (on any replica) is not held up. (A release that timed out is
    carried out by Redis itself when it resumes.)"""
    import os
    import shutil
    import signal

    from tests.redis_fixture import RedisServer

    server = RedisServer(shutil.which("redis-server") or pytest.skip("no redis-server"), tmp_path)
    server.start()
    try:
        address = fresh_address(server)
        holder = RedisState(connect(address), address.prefix, "s", key=address.key, lease=30.0)
        other = RedisState(connect(address), address.prefix, "s", key=address.key, wait=10.0)
        holder._redis.ping()  # its connection is open, as a replica's is
        os.kill(server.process.pid, signal.SIGSTOP)
        try:
            with pytest.raises(Exception, match="[Tt]imeout"):
                holder.lock().__enter__()  # the client's 2 s timeout; Redis still has the command
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
        with other.lock():  # within its 10 s wait, long before the 30 s lease would have freed it
            pass
    finally:
        server.stop()


def _round_trips(monkeypatch, client) -> list[str]:
    """What `client` sends to Redis from now on: one entry per round trip (a command or a pipeline)."""
    import redis

    sent: list[str] = []
    command, pipeline = client.execute_command, redis.client.Pipeline.execute
    monkeypatch.setattr(client, "execute_command", lambda *a, **k: sent.append(str(a[0])) or command(*a, **k))
    monkeypatch.setattr(redis.client.Pipeline, "execute", lambda self, *a, **k: sent.append("pipeline")
                        or pipeline(self, *a, **k))
    return sent


def test_a_run_under_the_lock_takes_four_round_trips(place, monkeypatch):
    """Take the lock (which also says the state's write counter and whether it exists), read the
    state when it changed, write what the run added, give the lock back: nothing else."""
    mine = place()
    with Session.open(mine) as session:
        run(_reminder_turns(4), session=session, store=CCRStore.in_memory(), config=SMALL_TAIL)
    with Session.open(place()) as session:  # another replica's run: the state changed
        session.set_next_trial(7)
    sent = _round_trips(monkeypatch, mine._redis)
    with mine.lock():
        session = Session.load(mine)  # what a worker does when the state changed
        session.set_next_trial(8)
        session.save()
        assert not session.changed_on_disk()  # known from the take and the write, not asked
    assert sent == ["EVALSHA", "MGET", "EVALSHA", "EVALSHA"]  # take, read, write, give back
    assert Session.load(place()).header.next_trial_at == 8


def test_a_holder_whose_lease_ran_out_does_not_write_over_the_new_holder(place):
    """A run longer than the lease: another process took the lock and wrote the state meanwhile.
    The late holder's write is refused (theirs wins; the caller drops its copy and reloads)."""
    from compress.state.session_store import StateChanged

    slow, quick = place(lease=0.3), place()
    with Session.open(slow) as first:
        first.set_next_trial(1)
    with slow.lock():
        late = Session.load(slow)
        time.sleep(0.5)  # the lease runs out
        with Session.open(quick) as theirs:
            theirs.set_next_trial(2)
        late.set_next_trial(3)
        with pytest.raises(StateChanged):
            late.save()
    assert Session.load(place()).header.next_trial_at == 2


def test_a_reload_checks_only_the_lines_it_has_not_checked_before(place, monkeypatch):
    """A replica reloads a state another replica appended to: the lines it already verified, the
    same bytes, are not verified again; a line changed in Redis since is new bytes: checked,
    rejected."""
    import compress.state.session_store as session_store

    mine = place()
    with Session.open(mine) as session:
        run(_reminder_turns(4), session=session, store=CCRStore.in_memory(), config=SMALL_TAIL)
    first, _ = mine.read()
    checked: list[bytes] = []
    verify = session_store.open_line
    monkeypatch.setattr(session_store, "open_line", lambda key, context, line: checked.append(line)
                        or verify(key, context, line))
    with Session.open(place()) as theirs:  # another replica: it verifies what it loads
        theirs.set_next_trial(5)
    checked.clear()
    again, _ = mine.read()
    assert again.startswith(first) and len(checked) == 1  # the one line appended
    stored = mine._redis.get(mine._data)
    header, rest = stored.split(b"\n", 1)
    mine._redis.set(mine._data, header + b"\n" + rest.replace(b'"next_trial_at":5', b'"next_trial_at":6'))
    checked.clear()
    tampered, _ = mine.read()
    assert len(checked) == 1 and b'{"next_trial_at":' not in tampered and mine.take_rejected() == 1
