"""A scripted stand-in for the model provider, on loopback, for driving real agent clients.

It speaks the three wire protocols the clients use:

- Anthropic Messages: `POST /v1/messages` (JSON, or SSE when `stream` is set) and
  `POST /v1/messages/count_tokens` (Claude Code; OpenCode's `anthropic` provider);
- OpenAI Responses: `POST /v1/responses` (JSON, or SSE) (Codex; OpenCode's `openai` provider);
- OpenAI Chat Completions: `POST /v1/chat/completions` (JSON, or SSE) (OpenAI-compatible providers).

The replies come from a **script**: a list of turns, each `Turn(text=…)` or `Turn(calls=[Call(…)])`
(tool calls, optionally with a short text before them). The stand-in keeps no conversation state:
every tool call id it emits carries the turn number (`toolu_e2e_03_0`, `call_e2e_03_0`), and the
turn to play is one past the highest such number found in the request. Retries, parallel side
requests and client restarts therefore all get the right turn. A request that offers no tools
(title generation, quota probes, summaries) is a side request and gets `side_text`, tagged with
the highest turn played so far, so a conversation compacted into that summary goes on where it was.

Every request is recorded (method, path, query, headers with credentials masked, the body parsed
as JSON when it is JSON) in `Standin.requests`, and, when `record_dir` is set, as one JSON file per
request (`0007-messages.json`). `check_anthropic`, `check_responses` and `check_chat` say what is
wrong with a request body (tool calls without results, results without calls, bad roles); an empty
list means protocol-valid.

Run it by hand: `python -m tests.e2e.standin --port 8765 --scenario codex --root /tmp/proj --record /tmp/rec`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fake_upstream import ServerThread as AppThread

SECRET_HEADERS = {"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"}
TURN_RE = re.compile(rb"_e2e_(\d{2})_\d+")


@dataclass
class Call:
    """One tool call. `args` is a dict for function tools, a string for custom (freeform) tools."""

    name: str
    args: dict | str
    custom: bool = False  # Responses API `custom_tool_call` (Codex's freeform apply_patch)


@dataclass
class Turn:
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    # Reasoning shown before the text: an Anthropic `thinking` block (with a fake signature), a
    # Responses `reasoning` item (summary + fake encrypted_content). Chat Completions: dropped.
    thinking: str = ""


# A turn may also be computed from the request: fn(body, turn_index) -> Turn.
Script = list["Turn | Callable[[dict, int], Turn]"]


@dataclass
class Recorded:
    n: int
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the text
    raw_size: int
    kind: str  # messages | count_tokens | responses | chat | other
    turn: int | None = None  # the script turn answered (None: side request or not a model call)
    stream: bool = False


class Standin:
    def __init__(self, script: Script, *, record_dir: Path | None = None, side_text: str = "E2E scenario",
                 model: str = "standin-model", input_tokens: Callable[[Recorded], int | None] | None = None) -> None:
        """`input_tokens(request)` may set the prompt tokens reported in `usage` (default: bytes / 4),
        e.g. to push a client over its context limit so that it compacts."""
        self.script = list(script)
        self.input_tokens = input_tokens
        self.record_dir = Path(record_dir) if record_dir else None
        self.side_text = side_text
        self.model = model
        self.requests: list[Recorded] = []
        self._n = itertools.count(1)
        self._lock = threading.Lock()
        if self.record_dir:
            self.record_dir.mkdir(parents=True, exist_ok=True)

    # -- views -----------------------------------------------------------------------------------

    def model_calls(self, kind: str | None = None) -> list[Recorded]:
        """Requests that asked the model for a reply (not count_tokens, not GETs)."""
        return [r for r in self.requests if r.kind in ("messages", "responses", "chat")
                and (kind is None or r.kind == kind)]

    def scripted_calls(self) -> list[Recorded]:
        return [r for r in self.requests if r.turn is not None]

    def turns_played(self) -> set[int]:
        return {r.turn for r in self.scripted_calls()}

    def problems(self) -> list[str]:
        """Protocol problems over every model request recorded so far."""
        out = []
        for r in self.model_calls():
            check = {"messages": check_anthropic, "responses": check_responses, "chat": check_chat}[r.kind]
            out += [f"request {r.n} ({r.path}): {p}" for p in check(r.body)]
        return out

    # -- the app ---------------------------------------------------------------------------------

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self.handle,
                                       methods=["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS"])])

    async def handle(self, request: Request) -> Response:
        raw = await request.body()
        path = request.url.path
        kind = _kind(request.method, path)
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k: ("***" if k.lower() in SECRET_HEADERS else v) for k, v in request.headers.items()}
        rec = Recorded(next(self._n), request.method, path, request.url.query, headers, body, len(raw), kind)
        with self._lock:
            self.requests.append(rec)
        try:
            return self._answer(rec, raw)
        finally:
            self._save(rec)

    def _answer(self, rec: Recorded, raw: bytes) -> Response:
        body = rec.body if isinstance(rec.body, dict) else {}
        if rec.kind == "count_tokens":
            return JSONResponse({"input_tokens": max(1, rec.raw_size // 4)})
        if rec.kind == "other":
            if rec.method == "GET" and rec.path.rstrip("/").endswith("/models"):
                return JSONResponse({"object": "list", "data": [
                    {"id": self.model, "object": "model", "type": "model", "display_name": self.model,
                     "created": 1700000000, "created_at": "2025-01-01T00:00:00Z", "owned_by": "standin"}],
                    "has_more": False, "first_id": self.model, "last_id": self.model})
            return JSONResponse({"error": {"type": "not_found_error", "message": f"stand-in: no route {rec.path}"}},
                                status_code=404)
        if not isinstance(rec.body, dict):
            return JSONResponse({"error": {"type": "invalid_request_error", "message": "body is not JSON"}},
                                status_code=400)
        rec.stream = bool(body.get("stream"))
        turn = self._turn_for(rec, raw)
        prompt = max(1, rec.raw_size // 4)
        if self.input_tokens and (reported := self.input_tokens(rec)) is not None:
            prompt = reported
        model = body.get("model") or self.model
        if rec.kind == "messages":
            message = anthropic_message(turn, rec.turn, rec.n, model, prompt)
            if rec.stream:
                return _sse_response(anthropic_events(message))
            return JSONResponse(message)
        if rec.kind == "responses":
            response = responses_object(turn, rec.turn, rec.n, model, prompt, body)
            if rec.stream:
                return _sse_response(responses_events(response))
            return JSONResponse(response)
        completion = chat_completion(turn, rec.turn, rec.n, model, prompt)
        if rec.stream:
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return _sse_response(chat_chunks(completion, usage))
        return JSONResponse(completion)

    def _turn_for(self, rec: Recorded, raw: bytes) -> Turn:
        body = rec.body
        if not offers_tools(body):
            # A side request (title, summary). Its reply carries the highest turn played so far as a
            # tag, so that when it becomes a compaction summary (which drops the tool call ids) the
            # conversation continues with the next turn instead of starting over.
            played = [r.turn for r in self.requests if r.turn is not None]
            tag = f" [e2e progress: turn_e2e_{max(played):02d}_99]" if played else ""
            return Turn(text=self.side_text + tag)
        seen = [int(m) for m in TURN_RE.findall(raw)]
        index = max(seen) + 1 if seen else 0
        if index >= len(self.script):
            # Past the script's end: repeat the last turn if it is text, else say done.
            last = self.script[-1] if self.script else Turn(text="done")
            turn = last if isinstance(last, Turn) and not last.calls else Turn(text="done")
        else:
            turn = self.script[index]
            if callable(turn):
                turn = turn(body, index)
        rec.turn = index
        return turn

    def _save(self, rec: Recorded) -> None:
        if not self.record_dir:
            return
        name = f"{rec.n:04d}-{rec.kind}.json"
        data = {"n": rec.n, "method": rec.method, "path": rec.path, "query": rec.query, "headers": rec.headers,
                "turn": rec.turn, "stream": rec.stream, "raw_size": rec.raw_size, "body": rec.body}
        try:  # recording must never turn a reply into a 500 (clients retry those for minutes)
            self.record_dir.mkdir(parents=True, exist_ok=True)
            (self.record_dir / name).write_text(json.dumps(data, indent=1, ensure_ascii=False))
        except OSError as e:
            rec.headers["x-standin-record-error"] = str(e)


def _kind(method: str, path: str) -> str:
    p = path.rstrip("/")
    if method != "POST":
        return "other"
    if p.endswith("/messages/count_tokens"):
        return "count_tokens"
    if p.endswith("/messages"):
        return "messages"
    if p.endswith("/responses"):
        return "responses"
    if p.endswith("/chat/completions"):
        return "chat"
    return "other"


def call_id(prefix: str, turn: int | None, i: int) -> str:
    return f"{prefix}_e2e_{(turn or 0):02d}_{i}"


# -- Anthropic Messages ----------------------------------------------------------------------------

def anthropic_message(turn: Turn, index: int | None, n: int, model: str, prompt: int) -> dict:
    content: list[dict] = []
    if turn.thinking:
        content.append({"type": "thinking", "thinking": turn.thinking, "signature": f"standin-signature-{n}"})
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for i, c in enumerate(turn.calls):
        content.append({"type": "tool_use", "id": call_id("toolu", index, i), "name": c.name,
                        "input": c.args if isinstance(c.args, dict) else {"input": c.args}})
    if not content:
        content.append({"type": "text", "text": "ok"})
    return {"id": f"msg_standin_{n:06d}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": "tool_use" if turn.calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": prompt, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "output_tokens": 20, "service_tier": "standard"}}


def anthropic_events(message: dict) -> list[bytes]:
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    events = [_sse("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            first = {"type": "text", "text": ""}
            t = block["text"]
            deltas = [{"type": "text_delta", "text": t[:len(t) // 2]}, {"type": "text_delta", "text": t[len(t) // 2:]}]
        elif block["type"] == "thinking":
            first = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]},
                      {"type": "signature_delta", "signature": block["signature"]}]
        else:
            first = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            js = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": js[:len(js) // 2]},
                      {"type": "input_json_delta", "partial_json": js[len(js) // 2:]}]
        events.append(_sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": first}))
        events.append(_sse("ping", {"type": "ping"}))
        events += [_sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(_sse("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                         "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


# -- OpenAI Responses ------------------------------------------------------------------------------

def responses_object(turn: Turn, index: int | None, n: int, model: str, prompt: int, request: dict) -> dict:
    output: list[dict] = []
    if turn.thinking:
        output.append({"type": "reasoning", "id": f"rs_standin_{n:06d}",
                       "summary": [{"type": "summary_text", "text": turn.thinking}],
                       "encrypted_content": f"standin-encrypted-{n}"})
    if turn.text:
        output.append({"type": "message", "id": f"msg_standin_{n:06d}", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": turn.text, "annotations": []}]})
    for i, c in enumerate(turn.calls):
        cid = call_id("call", index, i)
        if c.custom:
            output.append({"type": "custom_tool_call", "id": f"ctc_standin_{n:06d}_{i}", "status": "completed",
                           "call_id": cid, "name": c.name, "input": c.args if isinstance(c.args, str) else json.dumps(c.args)})
        else:
            output.append({"type": "function_call", "id": f"fc_standin_{n:06d}_{i}", "status": "completed",
                           "call_id": cid, "name": c.name,
                           "arguments": json.dumps(c.args) if isinstance(c.args, dict) else c.args})
    if not output:
        output.append({"type": "message", "id": f"msg_standin_{n:06d}", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": "ok", "annotations": []}]})
    return {"id": f"resp_standin_{n:06d}", "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": model, "output": output, "parallel_tool_calls": True, "tool_choice": request.get("tool_choice", "auto"),
            "tools": [], "store": bool(request.get("store", False)), "previous_response_id": request.get("previous_response_id"),
            "error": None, "incomplete_details": None, "instructions": None, "metadata": {},
            "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": prompt + 20}}


def responses_events(response: dict) -> list[bytes]:
    seq = itertools.count()

    def ev(kind: str, **data: Any) -> bytes:
        return _sse(kind, {"type": kind, "sequence_number": next(seq), **data})

    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    events = [ev("response.created", response=pending), ev("response.in_progress", response=pending)]
    for oi, item in enumerate(response["output"]):
        if item["type"] == "reasoning":
            text = item["summary"][0]["text"]
            events.append(ev("response.output_item.added", output_index=oi, item={**item, "summary": []}))
            events.append(ev("response.reasoning_summary_part.added", item_id=item["id"], output_index=oi,
                             summary_index=0, part={"type": "summary_text", "text": ""}))
            events.append(ev("response.reasoning_summary_text.delta", item_id=item["id"], output_index=oi,
                             summary_index=0, delta=text))
            events.append(ev("response.reasoning_summary_text.done", item_id=item["id"], output_index=oi,
                             summary_index=0, text=text))
            events.append(ev("response.reasoning_summary_part.done", item_id=item["id"], output_index=oi,
                             summary_index=0, part={"type": "summary_text", "text": text}))
        elif item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(ev("response.output_item.added", output_index=oi,
                             item={**item, "status": "in_progress", "content": []}))
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append(ev("response.content_part.added", item_id=item["id"], output_index=oi, content_index=0, part=part))
            for chunk in (text[:len(text) // 2], text[len(text) // 2:]):
                events.append(ev("response.output_text.delta", item_id=item["id"], output_index=oi, content_index=0,
                                 delta=chunk, logprobs=[]))
            events.append(ev("response.output_text.done", item_id=item["id"], output_index=oi, content_index=0,
                             text=text, logprobs=[]))
            events.append(ev("response.content_part.done", item_id=item["id"], output_index=oi, content_index=0,
                             part={**part, "text": text}))
        elif item["type"] == "function_call":
            events.append(ev("response.output_item.added", output_index=oi,
                             item={**item, "status": "in_progress", "arguments": ""}))
            events.append(ev("response.function_call_arguments.delta", item_id=item["id"], output_index=oi,
                             delta=item["arguments"]))
            events.append(ev("response.function_call_arguments.done", item_id=item["id"], output_index=oi,
                             arguments=item["arguments"]))
        else:  # custom_tool_call
            events.append(ev("response.output_item.added", output_index=oi,
                             item={**item, "status": "in_progress", "input": ""}))
            events.append(ev("response.custom_tool_call_input.delta", item_id=item["id"], output_index=oi,
                             delta=item["input"]))
            events.append(ev("response.custom_tool_call_input.done", item_id=item["id"], output_index=oi,
                             input=item["input"]))
        events.append(ev("response.output_item.done", output_index=oi, item=item))
    events.append(ev("response.completed", response=response))
    return events


# -- OpenAI Chat Completions -----------------------------------------------------------------------

def chat_completion(turn: Turn, index: int | None, n: int, model: str, prompt: int) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or (None if turn.calls else "ok"),
                               "refusal": None}
    if turn.calls:
        message["tool_calls"] = [{"id": call_id("call", index, i), "type": "function",
                                  "function": {"name": c.name,
                                               "arguments": json.dumps(c.args) if isinstance(c.args, dict) else c.args}}
                                 for i, c in enumerate(turn.calls)]
    return {"id": f"chatcmpl-standin-{n:06d}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if turn.calls else "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 20, "total_tokens": prompt + 20}}


def chat_chunks(completion: dict, usage: bool) -> list[bytes]:
    base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    msg = completion["choices"][0]["message"]

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        return _sse(None, {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})

    out = [chunk({"role": "assistant", "content": ""})]
    if msg.get("content"):
        out.append(chunk({"content": msg["content"]}))
    for i, tc in enumerate(msg.get("tool_calls") or []):
        out.append(chunk({"tool_calls": [{"index": i, "id": tc["id"], "type": "function",
                                          "function": {"name": tc["function"]["name"], "arguments": ""}}]}))
        out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": tc["function"]["arguments"]}}]}))
    out.append(chunk({}, completion["choices"][0]["finish_reason"]))
    if usage:
        out.append(_sse(None, {**base, "choices": [], "usage": completion["usage"]}))
    out.append(b"data: [DONE]\n\n")
    return out


# -- SSE -------------------------------------------------------------------------------------------

def _sse(event: str | None, obj: Any) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _sse_response(events: list[bytes]) -> StreamingResponse:
    async def gen() -> AsyncIterator[bytes]:
        for e in events:
            yield e
            await asyncio.sleep(0)

    return StreamingResponse(gen(), media_type="text/event-stream", headers={"cache-control": "no-cache"})


# -- protocol checks -------------------------------------------------------------------------------

def check_anthropic(body: Any) -> list[str]:
    """Problems the Anthropic Messages API would reject (roles, tool_use/tool_result pairing)."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return ["no messages list"]
    out: list[str] = []
    msgs = body["messages"]
    if not msgs:
        return ["messages is empty"]
    if msgs[0].get("role") != "user":
        out.append(f"first message has role {msgs[0].get('role')!r}")
    prev_role = None
    open_uses: set[str] = set()
    seen_ids: set[str] = set()
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role == "system":
            # Claude Code 2.1 sends mid-conversation system messages (beta
            # `mid-conversation-system-2026-04-07`): text only, never between a tool_use and its result.
            if open_uses:
                out.append(f"message {i}: system message between tool_uses {sorted(open_uses)} and their results")
            content = m.get("content")
            if not isinstance(content, str) and any(b.get("type") != "text" for b in content or []):
                out.append(f"message {i}: system message with non-text blocks")
            continue
        if role not in ("user", "assistant"):
            out.append(f"message {i} has role {role!r}")
        if role == prev_role:
            out.append(f"messages {i - 1} and {i} both have role {role!r}")
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        results = [b.get("tool_use_id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if role == "user":
            if set(results) != open_uses:
                out.append(f"message {i}: tool_results {sorted(results)} do not answer tool_uses {sorted(open_uses)}")
            if results and any(b.get("type") != "tool_result" for b in blocks[:len(results)]):
                out.append(f"message {i}: tool_result blocks must come first")
            open_uses = set()
        elif role == "assistant":
            if open_uses:
                out.append(f"message {i}: tool_uses {sorted(open_uses)} left without results")
            if results:
                out.append(f"message {i}: tool_result in an assistant message")
            uses = [b.get("id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
            for u in uses:
                if u in seen_ids:
                    out.append(f"message {i}: duplicate tool_use id {u}")
                seen_ids.add(u)
            open_uses = set(uses)
        prev_role = role
    if open_uses and msgs[-1].get("role") == "assistant" and len(msgs) > 1:
        pass  # an assistant prefill ending in tool_use would be odd, but is the caller's business
    return out


def check_responses(body: Any) -> list[str]:
    """Problems with a Responses API request: every call answered once, after it; no orphan outputs."""
    if not isinstance(body, dict):
        return ["body is not an object"]
    items = body.get("input")
    if isinstance(items, str):
        return []
    if not isinstance(items, list):
        return ["no input list"]
    out: list[str] = []
    calls: dict[str, str] = {}
    answered: set[str] = set()
    pairs = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output",
             "local_shell_call": "local_shell_call_output"}
    outputs = set(pairs.values())
    for i, it in enumerate(items):
        t = it.get("type", "message" if "role" in it else None)
        if t == "message" and it.get("role") not in ("user", "assistant", "system", "developer"):
            out.append(f"item {i}: message role {it.get('role')!r}")
        if t in pairs:
            cid = it.get("call_id")
            if not cid:
                out.append(f"item {i}: {t} without call_id")
            elif cid in calls:
                out.append(f"item {i}: duplicate call_id {cid}")
            calls[cid] = t
        elif t in outputs:
            cid = it.get("call_id")
            if cid not in calls:
                out.append(f"item {i}: {t} for unknown call_id {cid}")
            elif pairs[calls[cid]] != t:
                out.append(f"item {i}: {t} answers a {calls[cid]}")
            elif cid in answered:
                out.append(f"item {i}: second output for {cid}")
            answered.add(cid)
    for cid, t in calls.items():
        if cid not in answered and not body.get("previous_response_id"):
            out.append(f"{t} {cid} has no output")
    return out


def check_chat(body: Any) -> list[str]:
    """Problems with a Chat Completions request: each assistant tool_call answered by a tool message."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return ["no messages list"]
    out: list[str] = []
    pending: set[str] = set()
    for i, m in enumerate(body["messages"]):
        role = m.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            out.append(f"message {i}: role {role!r}")
        if role == "tool":
            if m.get("tool_call_id") not in pending:
                out.append(f"message {i}: tool result for unknown id {m.get('tool_call_id')}")
            pending.discard(m.get("tool_call_id"))
            continue
        if pending:
            out.append(f"message {i}: tool_calls {sorted(pending)} left without results")
            pending = set()
        if role == "assistant":
            pending = {tc.get("id") for tc in m.get("tool_calls") or []}
    if pending:
        out.append(f"tool_calls {sorted(pending)} left without results")
    return out


# -- reading requests ------------------------------------------------------------------------------

def offers_tools(body: Any) -> bool:
    """Whether a request offers the model tools: a `tools` list, or (Codex's "responses lite", its
    GPT-6 code mode) an `additional_tools` input item."""
    if not isinstance(body, dict):
        return False
    items = body.get("input")
    return bool(body.get("tools")) or isinstance(items, list) and any(
        isinstance(it, dict) and it.get("type") == "additional_tools" for it in items)


def text_of(content: Any) -> str:
    """The text of a message's or tool result's `content`: a string, or its parts' texts joined
    (Claude Code 2.1.332 sends a system message's context as text blocks with a cache breakpoint)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(c.get("text", c.get("content", c.get("output", "")))) if isinstance(c, dict) else str(c)
                         for c in content)
    return "" if content is None else str(content)


def tool_results(kind: str, body: Any) -> dict[str, str]:
    """call id → the result text the client sent back, for each tool result in a request body."""
    out: dict[str, str] = {}
    if not isinstance(body, dict):
        return out
    if kind == "messages":
        for m in body.get("messages") or []:
            if isinstance(m.get("content"), list):
                for b in m["content"]:
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        out[b.get("tool_use_id")] = text_of(b.get("content"))
    elif kind == "responses":
        for it in body.get("input") or []:
            if isinstance(it, dict) and it.get("type") in ("function_call_output", "custom_tool_call_output"):
                out[it.get("call_id")] = text_of(it.get("output"))
    elif kind == "chat":
        for m in body.get("messages") or []:
            if m.get("role") == "tool":
                out[m.get("tool_call_id")] = text_of(m.get("content"))
    return out


def results_by_turn(kind: str, body: Any) -> dict[int, str]:
    """script turn → the joined results of that turn's tool calls, as sent back in `body`."""
    out: dict[int, str] = {}
    for cid, text in tool_results(kind, body).items():
        m = TURN_RE.search((cid or "").encode())
        if m:
            turn = int(m.group(1))
            out[turn] = (out[turn] + "\n" + text) if turn in out else text
    return out


# -- serving ---------------------------------------------------------------------------------------

class ServerThread(AppThread):
    """Serve the stand-in on 127.0.0.1 (a free port unless given) in a background thread, with
    uvicorn's own logging, Server and Date headers, and idle connections kept 30 s, as a
    provider's API would."""

    def __init__(self, standin: Standin, port: int = 0) -> None:
        self.standin = standin
        super().__init__(standin.app(), port=port, lifespan="off", timeout_keep_alive=30, server_header=True,
                         date_header=True, log_config=uvicorn.config.LOGGING_CONFIG)


def main() -> None:
    import argparse

    from tests.e2e import scenarios

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--record", type=Path, default=None, help="folder for one JSON file per request")
    p.add_argument("--scenario", default="claude-code", choices=sorted(scenarios.SCENARIOS))
    p.add_argument("--root", type=Path, required=True, help="the scenario project (created when missing)")
    args = p.parse_args()
    root = args.root.resolve()
    if not (root / "app.py").exists():
        scenarios.make_project(root)
    scenario = scenarios.SCENARIOS[args.scenario](root)
    standin = Standin(scenario.script, record_dir=args.record)
    with ServerThread(standin, args.port) as srv:
        print(f"stand-in on {srv.url} (scenario {args.scenario}, project {root}); Ctrl-C to stop", flush=True)
        try:
            while srv.thread.is_alive():
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
