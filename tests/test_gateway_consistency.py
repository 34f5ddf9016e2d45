"""Any replica, any store, the same bytes: a session's state (calibration from the provider's
reported usage included) is written under its lock before anyone can ask for it again, so
replicas over Redis and one process on the embedded store send the provider the same requests."""

from __future__ import annotations

import pytest

from tests.proxy_fixtures import fake, start_proxy, upstream  # noqa: F401
from tests.proxy_helpers import example
from tests.redis_fixture import fresh_address
from tests.test_gateway_replicas import requests_of, send


@pytest.fixture
def usage_factor(fake):
    """The stand-in reports 3× ctxmill's estimate as prompt tokens (enough to change the tier)."""
    fake.usage_factor = 3.0
    yield
    fake.usage_factor = 1.0


def _sent(fake, url: str, body: dict) -> bytes:
    assert send(url, body).status_code == 200
    return fake.received[-1].body


def test_replicas_send_the_bytes_of_one_embedded_process_when_the_provider_reports_usage(
        fake, start_proxy, redis_server, tmp_path, usage_factor):
    shared = fresh_address(redis_server)
    replicas = [start_proxy(store=shared, workers=1) for _ in range(2)]
    alone = start_proxy(home=tmp_path / "embedded", workers=1)
    uncalibrated = start_proxy(workers=1, store=fresh_address(redis_server))
    turns = requests_of(example())
    on_replicas, in_one, plain = [], [], []
    for k, body in enumerate(turns):
        on_replicas.append(_sent(fake, replicas[k % 2].url, body))
        in_one.append(_sent(fake, alone.url, body))
        fake.usage_factor = 1.0
        plain.append(_sent(fake, uncalibrated.url, body))
        fake.usage_factor = 3.0
    assert on_replicas == in_one
    assert on_replicas != plain  # the reported usage decided something: calibration is in play


@pytest.mark.parametrize("reported", [False, True])
def test_a_replica_never_runs_on_the_state_before_even_when_writing_it_is_slow(fake, start_proxy, redis_server,
                                                                               tmp_path, reported):
    """The forced race: each worker pauses 0.3 s between its answer and writing the state, and
    the conversation's next request goes to the other replica at once (with and without usage
    reports, whose calibration the answer's end waits for)."""
    fake.usage_factor = 3.0 if reported else 0.0
    shared = fresh_address(redis_server)
    replicas = [start_proxy(store=shared, workers=1, save_delay=0.3) for _ in range(2)]
    alone = start_proxy(home=tmp_path / "embedded", workers=1)
    turns = requests_of(example())
    on_replicas = [_sent(fake, replicas[k % 2].url, body) for k, body in enumerate(turns)]
    in_one = [_sent(fake, alone.url, body) for body in turns]
    fake.usage_factor = 1.0
    assert on_replicas == in_one

