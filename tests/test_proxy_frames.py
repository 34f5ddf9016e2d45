"""The hand-off between the proxy's event loop and its workers: a frame's bytes arrive the same
through the shared region as over the socket (ctxmill.proxy.frames), and the compressed bytes a
session gets do not depend on which way they crossed."""

from __future__ import annotations

import asyncio
import os
import random
import socket
import threading

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxmill.proxy import frames

SIZES = st.one_of(st.integers(0, 300), st.integers(200_000, 900_000),
                  st.integers(frames.REGION_BYTES - 2, frames.REGION_BYTES + 2))


def _pair(shared: bool) -> tuple[socket.socket, socket.socket, frames.Region | None, frames.Region | None]:
    a, b = socket.socketpair()
    if not shared:  # what a system without anonymous memory files does
        a.sendall(b"-")
        return a, b, None, frames.accept_region(b)
    return a, b, frames.offer_region(a), frames.accept_region(b)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(SIZES, min_size=1, max_size=6), seed=st.integers(0, 2**32), shared=st.booleans())
def test_every_frame_arrives_as_sent_whichever_way_it_crossed(sizes, seed, shared):
    rng = random.Random(seed)
    a, b, ours, theirs = _pair(shared)
    assert (ours is not None) is (theirs is not None) is shared
    with a, b:
        for n, size in enumerate(sizes):
            payload = rng.randbytes(size)
            sender, receiver, region, other = (a, b, ours, theirs) if n % 2 == 0 else (b, a, theirs, ours)
            head, rest = frames.pack(payload, region)
            assert (int.from_bytes(head, "big") & frames.SHARED != 0) is (shared and size <= frames.REGION_BYTES)
            thread = threading.Thread(target=sender.sendall, args=(head + rest,))  # > a socket buffer
            thread.start()
            got = frames.receive(receiver, other)
            thread.join()
            assert got is not None
            with got:
                assert bytes(got) == payload


def test_a_shared_frame_without_a_region_is_a_broken_protocol_not_a_huge_read():
    a, b = socket.socketpair()
    with a, b:
        a.sendall(frames.header(10 | frames.SHARED))
        try:
            frames.receive(b, None)
        except ConnectionError:
            return
        raise AssertionError("a shared frame with no region was read")


def test_no_region_where_the_system_has_no_anonymous_memory_files(monkeypatch):
    monkeypatch.delattr(os, "memfd_create")
    a, b = socket.socketpair()
    with a, b:
        assert frames.offer_region(a) is None and frames.accept_region(b) is None
        assert frames.pack(b"abc", None) == (frames.header(3), b"abc")


OPS = st.lists(st.sampled_from(["grow", "grow", "grow", "rewrite", "restart", "move", "small region"]),
               min_size=2, max_size=7)


def _requests(ops: list[str]) -> list[tuple[str, bytes]]:
    """(what happens before it, body) per request of one growing session of the example."""
    from tests.proxy_helpers import example

    body = example()
    messages = body["messages"]
    n, out, edit = 3, [], 0
    for op in ops:
        if op == "grow":
            n = min(len(messages), n + 2)
        if op == "rewrite":  # history rewritten: an early message changes (the session re-plans)
            edit += 1
            messages = [{**messages[0], "content": f"{messages[0]['content']} (edited {edit})"}
                        if isinstance(messages[0]["content"], str) else messages[0], *messages[1:]]
        out.append((op, orjson.dumps({**body, "messages": messages[:n]})))
    return out


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_a_session_gets_the_same_bytes_through_the_region_as_over_the_socket(ops, tmp_path_factory, monkeypatch):
    """Random request sequences through real workers, with a worker restart, the session moving
    to the other worker (which loads its state from disk) and rewritten history: the compressed
    bytes and summaries are the same with the shared region (`small region`: a worker restarted
    with a region too small for its jobs, which then go over the socket) as over the socket alone."""
    from compress.config import CompressConfig
    from ctxmill.proxy import worker
    from ctxmill.proxy.workerpool import WorkerPool
    from tests.proxy_stages import CHAIN

    requests = _requests(ops)
    key, region_bytes = "a" * 32, frames.REGION_BYTES

    async def session(root) -> tuple[list, bool]:
        pool = WorkerPool(worker.WorkerSetup(root, None, CompressConfig(), CHAIN, max_sessions=8), 2)
        pool.start()
        route, out = key, []
        regions = all(s.process is not None and s.process._region is not None for s in pool._slots)
        try:
            for op, raw in requests:
                if op == "small region":  # the next worker's region is too small for its jobs
                    monkeypatch.setattr(frames, "REGION_BYTES", len(raw) // 2)
                if op in ("restart", "small region"):
                    # The worker writes a run's state after its answer, before it reads the next
                    # job: one more job makes the restart come after that write (killed before
                    # it, a worker loses the run's state, and what follows depends on the race).
                    await pool.submit(route, os.getpid).done
                    pool._replace(pool._slots[pool.slot(route)])
                if op == "move":  # the same session, routed to the other worker
                    route = next(k for k in ("0" * 32, "1" * 32) if pool.slot(k) != pool.slot(route))
                summary = await pool.submit(route, worker.compress_request, key, raw, None).done
                out.append((summary.data, summary.tokens_before, summary.tokens_after, summary.mode, summary.error))
        finally:
            await pool.close()
            monkeypatch.setattr(frames, "REGION_BYTES", region_bytes)
        return out, regions

    shared, with_regions = asyncio.run(session(tmp_path_factory.mktemp("shared")))
    with monkeypatch.context() as m:
        m.delattr(os, "memfd_create")  # the proxy offers no region: every frame over the socket
        plain, without = asyncio.run(session(tmp_path_factory.mktemp("socket")))
    assert with_regions and not without
    assert shared == plain
    assert all(not error and data is not None for data, *_, error in shared)  # each one compressed
