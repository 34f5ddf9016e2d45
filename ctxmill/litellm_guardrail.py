"""ctxmill inside LiteLLM's proxy: a guardrail whose pre-call hook compresses every request it routes.

Registered in LiteLLM's config.yaml as `guardrail: ctxmill.litellm_guardrail.CtxmillGuardrail`
with `mode: [pre_call, post_call]` (docs/gateway.md has the snippet); `store` and `home` among its
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
- Each run's session state is written before the pre-call hook returns (`Worker.finish`), so
  another LiteLLM instance on the same store never runs on the state of the request before.
- With `post_call` among the modes, the post-call hook reads the provider's reported usage from
  LiteLLM's response (`usage_of`): it calibrates the session as `ctxmill proxy` does (before
  LiteLLM returns the answer) and the request goes to the savings ledger with it; with
  `pre_call` alone, the ledger gets the request at pre-call, its cost modelled from the tokens.
  Rows are written in batches (`ctxmill.ledger.batch`), to the team's ledger with a store.
- Runs happen one at a time on one thread per LiteLLM process (the worker's contract), off the
  event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import xxhash
from litellm.integrations.custom_guardrail import CustomGuardrail

from ctxmill.proxy.identity import request_identity

if TYPE_CHECKING:
    from ctxmill.ledger.batch import LedgerWriter
    from ctxmill.ledger.store import RequestRow
    from ctxmill.proxy.stats import RunSummary

log = logging.getLogger("ctxmill.litellm")

SESSION_HEADERS = ("x-ctxmill-session", "x-claude-code-session-id", "session_id")
"""Headers that name the client's conversation (ctxmill's own, Claude Code's, Codex's), first found wins."""
SHAPES = {"completion": "openai_chat", "acompletion": "openai_chat",
          "anthropic_messages": "anthropic", "aanthropic_messages": "anthropic"}
FIELDS = {"openai_chat": ("model", "messages", "prompt_cache_key", "safety_identifier", "user"),
          "anthropic": ("model", "system", "messages")}
"""What the pipeline sees of a request: the conversation and what keys the session."""
REQUEST_SHAPE = {"openai_chat": "openai", "anthropic": "anthropic"}
"""The pipeline's name of each shape (`compress.formats.requests.SHAPES`)."""
IN_FLIGHT = 1024
"""Requests between their pre-call and post-call hooks remembered at once (oldest dropped)."""


@dataclass(frozen=True)
class Routed:
    """What the post-call hook needs of a request's pre-call run."""

    key: str
    shape: str
    summary: Any
    folder: str | None
    size: int


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
        self.ledger = _ledger(settings)
        self.routed: OrderedDict[str, Routed] = OrderedDict()

    def _post_call(self) -> bool:
        hooks = self.event_hook if isinstance(self.event_hook, list) else [self.event_hook]
        return any(str(getattr(h, "value", h)) == "post_call" for h in hooks)

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict, call_type: str) -> dict:
        shape = SHAPES.get(call_type)
        if shape is None or not isinstance(data.get("messages"), list):
            return data
        try:
            body = {k: data[k] for k in FIELDS[shape] if k in data}
            key = conversation_key(shape, body, headers_of(data))
            raw = orjson.dumps(body)
            loop = asyncio.get_running_loop()
            summary = await loop.run_in_executor(self.runs, self._compress, key, raw)
            routed = Routed(key, shape, summary, request_identity(REQUEST_SHAPE[shape], raw).folder, len(raw))
            if self._post_call():
                self._remember(data, routed)
            else:
                self.ledger.add(row(routed, None))
            if summary.error:
                log.warning("ctxmill: request passed through unchanged: %s", summary.error)
            if summary.data is not None:
                compressed = orjson.loads(summary.data)
                data.update({k: compressed[k] for k in body if k in compressed})
        except Exception as exc:  # noqa: BLE001 - fail open: LiteLLM sends the request as it came
            log.warning("ctxmill: request passed through unchanged: %s: %s", type(exc).__name__, exc)
        return data

    async def async_post_call_success_hook(self, data: dict, user_api_key_dict: Any, response: Any) -> Any:
        """The provider's usage of a routed request: its session's calibration, then the ledger."""
        try:
            routed = self.routed.pop(_call_id(data), None)
            if routed is None:
                return None
            usage = usage_of(routed.shape, response)
            s = routed.summary
            sent = s.tokens_after if s.data is not None else s.tokens_before
            if usage is not None and usage.prompt_total and sent and not s.error:
                await asyncio.get_running_loop().run_in_executor(
                    self.runs, self.worker.calibrate, routed.key, usage.prompt_total, sent,
                    s.tokens_before / routed.size if routed.size else 0.0)
            self.ledger.add(row(routed, usage))
        except Exception as exc:  # noqa: BLE001 - fail open: the answer goes back as it came
            log.warning("ctxmill: usage not recorded: %s: %s", type(exc).__name__, exc)
        return None

    def _compress(self, key: str, raw: bytes) -> RunSummary:
        """One run and its state written, on the run thread."""
        try:
            return self.worker.compress(key, raw)
        finally:
            self.worker.finish()

    def _remember(self, data: dict, routed: Routed) -> None:
        self.routed[_call_id(data)] = routed
        while len(self.routed) > IN_FLIGHT:
            self.routed.popitem(last=False)


def _call_id(data: dict) -> str:
    """The request's id across LiteLLM's hooks (its `litellm_call_id`; else the dict itself)."""
    value = data.get("litellm_call_id")
    return value if isinstance(value, str) and value else f"id:{id(data)}"


def _ledger(settings: Any) -> LedgerWriter:
    from ctxmill.ledger.batch import FileSink, LedgerWriter

    if settings.store is not None:
        from ctxmill.ledger.team import TeamSink

        return LedgerWriter(TeamSink(settings.store))
    from ctxmill.paths import ledger_file

    return LedgerWriter(FileSink(ledger_file()))


def usage_of(shape: str, response: Any) -> Any:
    """The provider's usage in LiteLLM's response (a ModelResponse for Chat Completions, the
    Anthropic-shaped answer for Messages), as `compress.formats.usage.Usage`; None without one."""
    from compress.formats.usage import Usage

    usage = response.get("usage") if isinstance(response, dict) else getattr(response, "usage", None)
    if usage is None:
        return None
    get = usage.get if isinstance(usage, dict) else (lambda name, default=None: getattr(usage, name, default))
    if shape == "anthropic":
        return Usage(input=int(get("input_tokens", 0) or 0), cache_read=int(get("cache_read_input_tokens", 0) or 0),
                     cache_write=int(get("cache_creation_input_tokens", 0) or 0),
                     output=int(get("output_tokens", 0) or 0))
    details = get("prompt_tokens_details", None)
    cached = (details.get("cached_tokens") if isinstance(details, dict) else getattr(details, "cached_tokens", 0)) or 0
    prompt = int(get("prompt_tokens", 0) or 0)
    return Usage(input=prompt - int(cached), cache_read=int(cached), output=int(get("completion_tokens", 0) or 0))


def row(routed: Routed, usage: Any) -> RequestRow:
    """A routed request as the savings ledger keeps it (a failed run saved nothing)."""
    from ctxmill.ledger import project_of, request_row

    s = routed.summary
    ran = s.data is not None and not s.error
    return request_row(face="litellm", session=routed.key, project=project_of(routed.folder), model=s.model,
                       vendor="anthropic" if routed.shape == "anthropic" else "openai",
                       tokens_before=s.tokens_before, tokens_after=s.tokens_after if ran else s.tokens_before,
                       usage=usage, stages=s.stages if ran else None)


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
        return session_key(REQUEST_SHAPE[shape], body) or ""
    return xxhash.xxh3_128(orjson.dumps(["header", shape, named])).hexdigest()
