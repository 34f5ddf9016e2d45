"""ctxmill as a guardrail inside a real LiteLLM proxy (from PyPI, started on a loopback port), in
front of the scripted stand-in upstream: Anthropic and OpenAI shapes are compressed exactly as
`ctxmill proxy` compresses the same conversation, and every marker expands from the shared store."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest

from ccr.expand import expand_first
from ccr.markers import find_markers
from tests.proxy_fixtures import fake, start_proxy, upstream  # noqa: F401
from tests.proxy_helpers import example, to_openai
from tests.redis_fixture import free_port, fresh_address
from tests.test_gateway_replicas import requests_of

pytest.importorskip("litellm", reason="LiteLLM is not installed (pip install -e '.[test,litellm]')")
pytestmark = pytest.mark.xdist_group("litellm")  # one worker, so the module's LiteLLM proxy starts once

CONFIG = """
[compress]
protect_tail_tokens = 0
protect_tail_turns = 1
epoch_savings_threshold = 300

[compress.tiers]
medium = 1000
high = 2000
"""


def litellm_config(upstream_url: str, store_url: str, home: Path) -> str:
    return f"""
model_list:
  - model_name: claude-test
    litellm_params: {{model: anthropic/claude-test, api_base: "{upstream_url}", api_key: sk-ant-test}}
  - model_name: gpt-test
    litellm_params: {{model: openai/gpt-test, api_base: "{upstream_url}/v1", api_key: sk-test}}
guardrails:
  - guardrail_name: ctxmill
    litellm_params:
      guardrail: ctxmill.litellm_guardrail.CtxmillGuardrail
      mode: [pre_call, post_call]
      default_on: true
      store: "{store_url}"
      home: "{home}"
"""


@contextlib.contextmanager
def litellm_proxy(folder: Path, upstream_url: str, store_url: str, config_toml: str = CONFIG):
    """A LiteLLM proxy (its own process, loopback) with the ctxmill guardrail; yields (url, master key)."""
    home = folder / ".ctxmill"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(config_toml)
    (folder / "config.yaml").write_text(litellm_config(upstream_url, store_url, home))
    port = free_port()
    binary = shutil.which("litellm", path=str(Path(sys.executable).parent)) or pytest.skip("no litellm command")
    master = "sk-" + secrets.token_hex(32)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
           "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "LITELLM_MASTER_KEY": master}
    log = open(folder / "litellm.log", "wb")
    process = subprocess.Popen([binary, "--config", str(folder / "config.yaml"), "--host", "127.0.0.1",
                                "--port", str(port)], cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/health/liveliness", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None:
                raise RuntimeError("LiteLLM exited: " + (folder / "litellm.log").read_text()[-2000:])
            time.sleep(0.5)
        else:
            raise RuntimeError("LiteLLM did not start within 120 s: " + (folder / "litellm.log").read_text()[-2000:])
        yield url, master
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()


@pytest.fixture(scope="module")
def gateway(upstream, redis_server, tmp_path_factory):
    """A LiteLLM proxy with the ctxmill guardrail on the shared store; yields (url, store address, master key)."""
    address = fresh_address(redis_server)
    with litellm_proxy(tmp_path_factory.mktemp("litellm"), upstream.url,
                       f"{redis_server.url}?prefix={address.prefix}") as (url, master):
        yield url, address, master


def prefix_shares(sent: list[list]) -> list[float]:
    """Of each request's conversation bytes, the share that is a byte prefix of the next request's."""
    out = []
    for this, following in zip(sent, sent[1:]):
        a, b = orjson.dumps(this)[:-1], orjson.dumps(following)  # without the closing bracket
        same = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        out.append(same / len(a))
    return out


def without_null_content(sent: list[list]) -> list[list]:
    """What LiteLLM makes of a Chat Completions conversation: assistant messages lose `"content": null`."""
    return [[{k: v for k, v in m.items() if not (k == "content" and v is None)} for m in request] for request in sent]


def run_conversation(url: str, path: str, turns: list[dict], fake, headers: dict) -> list[list]:
    sent = []
    for body in turns:
        r = httpx.post(url + path, json=body, headers=headers, timeout=60)
        assert r.status_code == 200, r.text[:500]
        sent.append(fake.received[-1].json()["messages"])
    return sent


@pytest.mark.parametrize("shape", ["anthropic", "openai"])
def test_litellm_compresses_as_the_ctxmill_proxy_does(gateway, fake, start_proxy, redis_server, shape, tmp_path):
    url, address, master = gateway
    body = example()
    if shape == "openai":
        body = {"model": "gpt-test", "messages": to_openai(body["system"], body["messages"])}
        turns = [{**body, "messages": body["messages"][:k]} for k in range(2, len(body["messages"]) + 1)
                 if body["messages"][k - 1]["role"] in ("user", "tool")]
        path, headers = "/v1/chat/completions", {"authorization": "Bearer sk-test"}
    else:
        turns = requests_of({**body, "model": "claude-test"})
        path, headers = "/v1/messages", {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
    through_litellm = run_conversation(url, path, turns, fake, {"authorization": f"Bearer {master}",
                                                                "x-ctxmill-session": f"s-{shape}"})
    from tests.proxy_fixtures import SMALL

    proxy = start_proxy(store=fresh_address(redis_server), workers=1, compress=SMALL, chain=None)
    through_proxy = run_conversation(proxy.url, path, turns, fake, headers)

    raw = [orjson.dumps(t["messages"]) for t in turns]
    assert orjson.dumps(through_litellm[-1]) != raw[-1]  # compressed
    assert sum(map(len, map(orjson.dumps, through_litellm))) < sum(map(len, raw))
    # the same conversation as ctxmill's own proxy sends (LiteLLM itself drops `"content": null`)
    assert without_null_content(through_litellm) == without_null_content(through_proxy)
    assert prefix_shares(through_litellm) == prefix_shares(without_null_content(through_proxy))
    keys = {m.key for sent in through_litellm for m in find_markers(orjson.dumps(sent).decode())}
    assert keys and all(expand_first([], key, shared=address).ok for key in keys)
    # the post-call hook put each request in the team's ledger with the provider's reported usage
    from ctxmill.ledger.store import Ledger
    from ctxmill.ledger.team import synced
    from ctxmill.litellm_guardrail import conversation_key

    session = conversation_key("openai_chat" if shape == "openai" else "anthropic", {}, {"x-ctxmill-session": f"s-{shape}"})
    deadline = time.monotonic() + 20  # rows are written within a second
    while True:
        with Ledger.open(synced(address, tmp_path / "team.sqlite")) as ledger:
            rows = ledger.query("SELECT reported, input, cache_read FROM requests WHERE face = 'litellm' AND session = ?",
                                (session,))
        if len(rows) >= len(turns) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert len(rows) == len(turns) and all(r["reported"] and r["input"] + r["cache_read"] > 0 for r in rows)

