"""The window a proxied request runs in (`ctxmill.proxy.window`): the long-context beta, the
window Codex gives its model (the headers and body start Codex 0.171 sends, captured from the
real client against the e2e stand-in), else the model table; through the proxy, the tiers follow."""

from __future__ import annotations

import json
from dataclasses import replace

import httpx
import orjson
from hypothesis import given
from hypothesis import strategies as st

from compress.tiers import KNOWN_WINDOWS, TierThresholds, known_window
from ctxmill.proxy.window import declared_context_window
from tests.test_proxy import SMALL, fake, start_proxy, stats, upstream  # noqa: F401 - fixtures
from tests.test_proxy_responses import codex_request

CODEX_HEADERS = [("originator", "codex_exec"), ("user-agent", "codex_exec/0.171.0 (Debian 12.0.0; x86_64) xterm"),
                 ("session-id", "01a23c67-45ce-7f92-8581-cb1c4978768a"), ("accept", "text/event-stream")]
"""What `codex exec` 0.171 sends besides its credentials (no window among them)."""


def codex_body(model: str) -> bytes:
    """A body as Codex serializes it: `model` first."""
    return orjson.dumps({"model": model, "stream": True, "input": [], "store": False})


def test_codex_runs_gpt_5_6_in_its_catalogues_272k_window_and_other_clients_get_the_tables_372k():
    assert declared_context_window(CODEX_HEADERS, codex_body("gpt-5.6-sol")) == 272_000
    assert declared_context_window([("originator", "codex_tui")], codex_body("gpt-5.6-luna")) == 272_000
    assert declared_context_window([("originator", "codex_exec")], codex_body("gpt-6.2-sol")) == 500_000
    assert declared_context_window(CODEX_HEADERS[2:], codex_body("gpt-5.6-sol")) is None  # no client named
    assert known_window("gpt-5.6-sol") == 372_000 and known_window("gpt-5.6-sol", "codex") == 272_000
    assert known_window("gpt-6.2-sol", "codex") == known_window("gpt-6.2-sol") == 500_000


def test_the_long_context_beta_declares_1m_and_a_body_not_led_by_its_model_gets_the_table():
    assert declared_context_window([("Anthropic-Beta", "claude-code-20250219, context-1m-2025-08-07")]) == 1_000_000
    assert declared_context_window([("anthropic-beta", "claude-code-20250219")]) is None
    late = orjson.dumps({"stream": True, "model": "gpt-5.6-sol"})
    assert declared_context_window(CODEX_HEADERS, late) is None


@given(st.sampled_from(sorted(KNOWN_WINDOWS)), st.text(max_size=12, alphabet="abcdefghijklmnopqrstuvwxyz-0123456789"),
       st.binary(max_size=400))
def test_a_codex_requests_window_is_codexs_window_for_its_model_whatever_follows(family, suffix, tail):
    model = family + suffix
    raw = codex_body(model)[:-1] + b"," + tail
    assert declared_context_window(CODEX_HEADERS, raw) == known_window(model, "codex")


def test_through_the_proxy_a_codex_gpt_5_6_request_reaches_the_high_tier_sooner(fake, start_proxy):
    """One request, two sessions: high is set so that the request is past it scaled to Codex's
    272K window (× 1.36) and short of it scaled to the table's 372K (× 1.86)."""
    body = {**codex_request(logs=1), "model": "gpt-5.6-sol"}
    probe = start_proxy(compress=SMALL)
    assert httpx.post(probe.url + "/v1/responses", content=orjson.dumps(body), timeout=60).status_code == 200
    tokens = stats(probe)["sessions"][0]["tokens_before"]
    high = round(tokens / 1.6)
    proxy = start_proxy(compress=replace(SMALL, tiers=TierThresholds(medium=1_000, high=high)))
    tiers = []
    for n, headers in enumerate(({"originator": "codex_exec"}, {})):
        raw = orjson.dumps({**body, "prompt_cache_key": f"codex-session-{n}"})
        assert raw.startswith(b'{"model":"gpt-5.6-sol"')
        assert httpx.post(proxy.url + "/v1/responses", content=raw, headers=headers, timeout=60).status_code == 200
        tiers.append(stats(proxy)["sessions"][0]["last_tier"])
    assert tiers == ["high", "medium"], json.dumps(stats(proxy)["sessions"])[:400]
