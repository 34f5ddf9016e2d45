"""bench/gateway.py's fault phase: what a Redis fault does to the requests of a conversation.

Per fault, one corpus session on 2 replicas (each request to the next), default latency budget:
its first half with Redis well, then the fault, then the rest (`AFTER` requests during or after
it). For each request of the second half: status, latency, and its upstream bytes: unchanged
(sent as the client sent it), compressed. Faults:
- stop: redis-server stopped for the rest of the session (started again afterwards);
- hang: redis-server SIGSTOPped for `HANG_SECONDS` while the next request runs, then SIGCONT;
- restart: redis-server stopped and started again between two requests (no persistence: the
  state and originals are gone; the session starts a new epoch);
- lock: a lock key without a lease on the session (garbage, or a program that is not ctxmill).
Run through bench/gateway.py (`--skip` the other phases).
"""

from __future__ import annotations

import os
import signal
import threading
import time

import httpx
import orjson

from ctxmill.proxy.identity import session_key
from ground.redis_client import StoreAddress, connect

HANG_SECONDS = 2.0


def faults_phase(folder, redis, url, upstream: str, fake, turns: list[bytes], Replicas, post, received) -> None:
    name = session_key("anthropic", orjson.loads(turns[-1]))
    for fault in ("stop", "hang", "restart", "lock"):
        prefix = f"fault-{fault}:"
        replicas = Replicas(folder, url(prefix), upstream, 2, budget="25")
        middle = len(turns) // 2
        try:
            for k in range(middle):
                post(replicas.urls[k % 2], turns[k], f"{fault}/{k}")
            rows = []
            hang = None
            began_fault = time.perf_counter()
            back = began_fault  # when Redis answers again (stop: never, within the session)
            if fault == "stop":
                redis.stop()
            elif fault == "restart":
                redis.stop()
                redis.start()
            elif fault == "lock":
                client = connect(StoreAddress.parse(url(prefix)))
                client.set(f"{prefix}session:proxy-{name}:lock", b"not-ctxmill")  # no TTL
                client.close()
            elif fault == "hang":
                os.kill(redis.process.pid, signal.SIGSTOP)
                hang = threading.Timer(HANG_SECONDS, os.kill, (redis.process.pid, signal.SIGCONT))
                hang.start()
                back = began_fault + HANG_SECONDS
            for k in range(middle, len(turns)):
                began = time.perf_counter()
                status = post(replicas.urls[k % 2], turns[k], f"{fault}/{k}")
                took = time.perf_counter() - began
                body = received(fake, f"{fault}/{k}")
                rows.append((status, took, body == turns[k], began - back))
            if hang is not None:
                hang.join()
            stats = [httpx.get(u + "/ctxmill/stats", trust_env=False).json()["totals"]
                     for u in replicas.urls]
        finally:
            replicas.stop()
            if fault == "stop":
                redis.start()
        statuses = sorted({r[0] for r in rows})
        times = sorted(r[1] for r in rows)
        unchanged = [i for i, r in enumerate(rows) if r[2]]
        resumed = next(((i, r[3]) for i, r in enumerate(rows) if not r[2] and r[3] >= 0), None)
        recovery = ("never (Redis stays down)" if fault == "stop" else
                    f"request {resumed[0] + 1}, sent {resumed[1]:.2f} s after Redis answered again" if resumed else "-")
        print(f"fault {fault}: {len(rows)} requests after it, statuses {statuses}, latency median "
              f"{1000 * times[len(times) // 2]:.0f} ms, max {1000 * times[-1]:.0f} ms (request "
              f"{max(range(len(rows)), key=lambda i: rows[i][1]) + 1}); {len(unchanged)} sent unchanged "
              f"(requests {[i + 1 for i in unchanged][:12]}), {len(rows) - len(unchanged)} compressed; "
              f"store failures {sum(s['store_failures'] for s in stats)}, deferred {sum(s['deferred'] for s in stats)};"
              f" first compressed after it: {recovery}",
              flush=True)
