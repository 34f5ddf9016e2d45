"""ctxmill inside LiteLLM vs `ctxmill proxy` on the same corpus conversation (loopback, bounded).

Starts redis-server, the stand-in upstream, a real LiteLLM proxy with the ctxmill guardrail
(default settings) and one `ctxmill proxy --store` replica, replays --sessions corpus Claude Code
sessions (their last --turns user turns) through each, and reports per path: tokens sent raw vs
compressed (ctxmill's estimate of the conversation) and the mean share of each request's
conversation bytes that is a byte prefix of the next (what the provider can read from its cache).
Run: python bench/gateway_litellm.py [--sessions 1 --turns 30]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.gateway import HEADERS, STORE_KEY, Replicas, corpus_turns, loopback  # noqa: E402
from compress.token_counters import estimate_tokens  # noqa: E402
from tests.test_litellm_guardrail import litellm_proxy, prefix_shares, run_conversation  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=1)
    p.add_argument("--turns", type=int, default=30)
    args = p.parse_args()
    os.environ.setdefault("CTXMILL_STORE_KEY", STORE_KEY)  # the LiteLLM process signs with the replicas' key
    with loopback("litellm") as (folder, redis, fake, upstream):
        sessions = [[{**orjson.loads(b), "model": "claude-test"} for b in s] for s in corpus_turns(args.sessions, args.turns)]
        with litellm_proxy(folder / "litellm", upstream.url, f"{redis.url}?prefix=litellm:", "") as (url, master):
            through_litellm = [run_conversation(url, "/v1/messages", turns, fake,
                                                {"authorization": f"Bearer {master}"}) for turns in sessions]
        proxy = Replicas(folder, f"{redis.url}?prefix=proxy:", upstream.url, 1)
        try:
            through_proxy = [run_conversation(proxy.urls[0], "/v1/messages", turns, fake, HEADERS) for turns in sessions]
        finally:
            proxy.stop()
        for i, turns in enumerate(sessions):
            raw = sum(estimate_tokens(orjson.dumps(t["messages"]).decode()) for t in turns)
            for name, sent in (("LiteLLM + ctxmill", through_litellm[i]), ("ctxmill proxy", through_proxy[i])):
                tokens = sum(estimate_tokens(orjson.dumps(m).decode()) for m in sent)
                shares = prefix_shares(sent)
                print(f"session {i} ({len(turns)} requests) {name}: {raw:,} -> {tokens:,} tokens "
                      f"({100 * (1 - tokens / raw):.1f}% fewer); prefix share of the next request: mean "
                      f"{sum(shares) / len(shares):.4f}, min {min(shares):.4f}")
            print(f"session {i}: identical conversations on both paths: {through_litellm[i] == through_proxy[i]}")


if __name__ == "__main__":
    main()
