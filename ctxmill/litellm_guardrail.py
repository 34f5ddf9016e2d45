"""ctxmill inside LiteLLM's proxy: a guardrail whose pre-call hook compresses every request it routes.

Registered in LiteLLM's config.yaml as `guardrail: ctxmill.litellm_guardrail.CtxmillGuardrail`
with `mode: pre_call` (docs/gateway.md has the snippet); `store` and `home` among its
`litellm_params` reach `__init__`.

Must hold:
- Chat Completions requests (`completion` calls) and Anthropic Messages requests
  (`anthropic_messages` calls) are compressed exactly as `ctxmill proxy` compresses them: the
  same worker code (`ctxmill.proxy.worker.Worker`), the same session state and CCR store (the
  shared store when `store` is set, else the user's embedded ones), so `deep_expand` through
  ctxmill's MCP server finds every original it cut. Other calls pass untouched.
- The session is the client's session header when it sends one (`SESSION_HEADERS`), else the
  conversation's opening (`ctxmill.proxy.identity.session_key`), as the proxy keys it.
- Only the conversation fields are handed to the pipeline and only they are replaced; LiteLLM's
  own fields (metadata, logging objects, …) are never read or changed.
- Fail open: any failure returns the request unchanged (logged); nothing raises to LiteLLM.
- Every routed request goes to the savings ledger (`record`, face "litellm"), written on the
  run thread after the request has gone on.
- Runs happen one at a time on one thread per LiteLLM process (the worker's contract), off the
  event loop.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import xxhash
from litellm.integrations.custom_guardrail import CustomGuardrail

log = logging.getLogger("ctxmill.litellm")

SESSION_HEADERS = ("x-ctxmill-session", "x-claude-code-session-id", "session_id")
"""Headers that name the client's conversation (ctxmill's own, Claude Code's, Codex's), first found wins."""
SHAPES = {"completion": "openai_chat", "acompletion": "openai_chat",
          "anthropic_messages": "anthropic", "aanthropic_messages": "anthropic"}
FIELDS = {"openai_chat": ("model", "messages", "prompt_cache_key", "safety_identifier", "user"),
          "anthropic": ("model", "system", "messages")}
"""What the pipeline sees of a request: the conversation and what keys the session."""


class CtxmillGuardrail(CustomGuardrail):
    def __init__(self, store: str | None = None, home: str | None = None, **kwargs: Any) -> None:
        """`store`: a shared store URL (else CTXMILL_STORE, else the user's config); `home`: the
        ctxmill home for embedded state (default: the project home of LiteLLM's folder)."""
        super().__init__(**kwargs)
        from ctxmill.paths import sessions_dir
        from ctxmill.proxy.worker import Worker, WorkerSetup
        from ctxmill.settings import Settings

        settings = Settings.load(Path(home) if home else None, store=store)
        self.worker = Worker(WorkerSetup(
            sessions_root=None if settings.store is not None else sessions_dir(settings.home),
            ccr_root=settings.ccr_dir, ccr_retention=settings.ccr, store=settings.store,
            compress=settings.compress, chain=None, max_sessions=256))
        self.runs = ThreadPoolExecutor(1, thread_name_prefix="ctxmill-litellm")

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict, call_type: str) -> dict:
        shape = SHAPES.get(call_type)
        if shape is None or not isinstance(data.get("messages"), list):
            return data
        try:
            body = {k: data[k] for k in FIELDS[shape] if k in data}
            key = conversation_key(shape, body, headers_of(data))
            loop = asyncio.get_running_loop()
            summary = await loop.run_in_executor(self.runs, self.worker.compress, key, orjson.dumps(body), None, None)
            self.runs.submit(record, key, shape, summary)
            if summary.error:
                log.warning("ctxmill: request passed through unchanged: %s", summary.error)
            if summary.data is not None:
                compressed = orjson.loads(summary.data)
                data.update({k: compressed[k] for k in body if k in compressed})
        except Exception as exc:  # noqa: BLE001 - fail open: LiteLLM sends the request as it came
            log.warning("ctxmill: request passed through unchanged: %s: %s", type(exc).__name__, exc)
        return data


def record(session: str, shape: str, summary: Any) -> None:
    """Add a routed request to the savings ledger (`ctxmill.ledger`; a failed run saved nothing).
    The provider's usage does not reach a pre-call hook: costs are modelled from the tokens."""
    from ctxmill.ledger import project_of, record_request

    ran = summary.data is not None and not summary.error
    record_request(face="litellm", session=session, project=project_of(summary.folder), model=summary.model,
                   vendor="anthropic" if shape == "anthropic" else "openai", tokens_before=summary.tokens_before,
                   tokens_after=summary.tokens_after if ran else summary.tokens_before,
                   stages=summary.stages if ran else None)


def headers_of(data: dict) -> dict[str, str]:
    """The client's request headers as LiteLLM's proxy hands them to hooks (lower-cased names)."""
    request = data.get("proxy_server_request")
    headers = request.get("headers") if isinstance(request, dict) else None
    return {str(k).lower(): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {}


def conversation_key(shape: str, body: dict, headers: dict[str, str]) -> str:
    """The session: the client's session header when present, else the conversation's opening."""
    from ctxmill.proxy.identity import session_key

    named = next((headers[h] for h in SESSION_HEADERS if headers.get(h)), None)
    if named is None:
        return session_key(shape, body)
    return xxhash.xxh3_128(orjson.dumps(["header", shape, named])).hexdigest()
