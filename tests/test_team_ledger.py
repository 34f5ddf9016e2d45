"""One ledger for a team: every replica on a shared store adds its requests to the store, and
`ctxmill stats --store` and each replica's dashboard show all of them."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import orjson

from tests.proxy_fixtures import fake, start_proxy, upstream  # noqa: F401
from tests.proxy_helpers import example
from tests.redis_fixture import fresh_address
from tests.test_gateway_replicas import requests_of, send


def _team_stats(url: str, env: dict) -> dict:
    r = subprocess.run([sys.executable, "-m", "ctxmill", "stats", "--json", "--store", url], capture_output=True,
                       timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    return orjson.loads(r.stdout)["totals"]


def test_ctxmill_stats_and_every_dashboard_show_the_whole_teams_requests(fake, start_proxy, redis_server, tmp_path):
    address = fresh_address(redis_server)
    replicas = [start_proxy(store=address, workers=1, home=tmp_path / f"replica{i}") for i in range(3)]
    for k, body in enumerate(requests_of(example())):
        assert send(replicas[k % 3].url, body).status_code == 200
    handled = sum(httpx.get(r.url + "/ctxmill/stats").json()["totals"]["requests"] for r in replicas)
    url = f"{redis_server.url}?prefix={address.prefix}"
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "someone-else")}
    deadline = time.monotonic() + 30  # the replicas write their rows within a second
    while (totals := _team_stats(url, env))["requests"] < handled and time.monotonic() < deadline:
        time.sleep(0.3)
    assert totals["requests"] == handled and handled == len(requests_of(example()))
    for replica in replicas:
        assert httpx.get(replica.url + "/ctxmill/api/summary").json()["totals"]["requests"] == handled
    mine = subprocess.run([sys.executable, "-m", "ctxmill", "stats", "--json"], capture_output=True, timeout=60,
                          env={k: v for k, v in env.items() if k != "CTXMILL_STORE"})
    assert orjson.loads(mine.stdout)["totals"]["requests"] == 0  # a user's own ledger is not the team's


def test_a_row_from_a_newer_replica_is_counted_with_the_fields_this_version_knows():
    """During an upgrade, replicas of two versions share the stream: a row carrying a field this
    version does not know is read with the ones it does, not dropped as a failed row."""
    from ctxmill.ledger.store import Project, RequestRow
    from ctxmill.ledger.team import _decoded, _encoded

    row = RequestRow("proxy", "s1", Project("p1", "demo"), "claude-opus-5", "opus", 1000, 400, 1.0, 0.5,
                     deferred=True, stages={"trim_outputs": 600}, ts=12.5)
    assert _decoded(_encoded(row)) == row
    newer = orjson.loads(_encoded(row)) | {"a_field_of_a_later_version": 3}
    assert _decoded(orjson.dumps(newer)) == row
