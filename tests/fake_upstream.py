"""A fake Anthropic + OpenAI API on loopback for proxy tests and the proxy benchmark.

It records every request it receives (method, path, query, headers, body bytes) and the exact
bytes it answered with, and replies in the providers' recorded shapes: Messages JSON and SSE
(message_start … message_stop), Chat Completions JSON and chunked SSE (with a final usage chunk
when `stream_options.include_usage` is set), Responses JSON and SSE (response.created …
response.completed, usage in the last), count_tokens. Replies come from `replies`
(a queue of assistant messages in the provider's shape) or a one-line text default.
Reported prompt tokens are the body's bytes / 4 (× `usage_factor`).
Per-request behaviour via headers: `x-fake-status: 429` answers that status with a provider error
body; `x-fake-slow: N` streams N events 50 ms apart (for disconnect tests).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route


@dataclass
class Received:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass
class FakeUpstream:
    delay: float = 0.0
    usage_factor: float = 1.0
    """Reported prompt tokens = body bytes / 4 × this (1.3: a provider counting 30% more than
    ctxmill's estimate, as the gateway bench has it)."""
    received: list[Received] = field(default_factory=list)
    sent: list[bytes] = field(default_factory=list)
    replies: deque = field(default_factory=deque)
    cancelled: int = 0
    _counter: int = 0

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self.handle, methods=["GET", "POST", "DELETE", "PUT"])])

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        self.received.append(Received(request.method, request.url.path, request.url.query,
                                      dict(request.headers), body))
        if self.delay:
            await asyncio.sleep(self.delay)
        anthropic = request.url.path.startswith("/v1/messages")
        if status := request.headers.get("x-fake-status"):
            err = ({"type": "error", "error": {"type": "rate_limit_error", "message": f"fake {status}"}}
                   if anthropic else {"error": {"message": f"fake {status}", "type": "fake", "code": None}})
            return self._json(err, int(status))
        if request.url.path == "/v1/messages/count_tokens":
            return self._json({"input_tokens": len(body) // 4})
        if request.method != "POST" or request.url.path not in ("/v1/messages", "/v1/chat/completions",
                                                                   "/v1/responses"):
            return self._json({"method": request.method, "path": request.url.path, "query": request.url.query})
        try:
            req = orjson.loads(body)
            if not isinstance(req, dict):
                raise orjson.JSONDecodeError("not an object", "", 0)
        except orjson.JSONDecodeError:
            err = ({"type": "error", "error": {"type": "invalid_request_error", "message": "invalid JSON"}}
                   if anthropic else {"error": {"message": "invalid JSON", "type": "invalid_request_error"}})
            return self._json(err, 400)
        self._counter += 1
        prompt = int(len(body) // 4 * self.usage_factor)
        slow = int(request.headers.get("x-fake-slow", "0"))
        if anthropic:
            message = self.replies.popleft() if self.replies else {"role": "assistant", "content": [
                {"type": "text", "text": f"reply {self._counter}"}]}
            if req.get("stream"):
                return self._stream(anthropic_events(message, self._counter, prompt, slow))
            return self._json(anthropic_message(message, self._counter, prompt))
        if request.url.path == "/v1/responses":
            items = self.replies.popleft() if self.replies else [{"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": f"reply {self._counter}", "annotations": []}]}]
            if req.get("stream"):
                return self._stream(responses_events(items, self._counter, prompt, slow))
            return self._json(responses_body(items, self._counter, prompt))
        message = self.replies.popleft() if self.replies else {"role": "assistant", "content": f"reply {self._counter}"}
        usage = bool((req.get("stream_options") or {}).get("include_usage"))
        if req.get("stream"):
            return self._stream(openai_chunks(message, self._counter, prompt, usage, slow))
        return self._json(openai_completion(message, self._counter, prompt))

    def _json(self, obj: Any, status: int = 200) -> Response:
        data = orjson.dumps(obj)
        self.sent.append(data)
        return Response(data, status_code=status, media_type="application/json",
                        headers={"request-id": f"req_{self._counter}", "x-fake-upstream": "1"})

    def _stream(self, events: list[tuple[bytes, float]]) -> StreamingResponse:
        record = bytearray()
        self.sent.append(record)  # type: ignore[arg-type]  # filled as it streams

        async def body() -> AsyncIterator[bytes]:
            try:
                for data, pause in events:
                    if pause:
                        await asyncio.sleep(pause)
                    record.extend(data)
                    yield data
            except BaseException:
                self.cancelled += 1
                raise

        return StreamingResponse(body(), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache", "request-id": f"req_{self._counter}"})


def _sse(event: str | None, obj: Any) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + orjson.dumps(obj) + b"\n\n"


def anthropic_message(message: dict, n: int, prompt: int) -> dict:
    content = message["content"]
    stop = "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn"
    return {"id": f"msg_{n:06d}", "type": "message", "role": "assistant", "model": "claude-fake",
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": prompt // 2, "cache_read_input_tokens": prompt - prompt // 2,
                      "cache_creation_input_tokens": 0, "output_tokens": 40}}


def anthropic_events(message: dict, n: int, prompt: int, slow: int = 0) -> list[tuple[bytes, float]]:
    full = anthropic_message(message, n, prompt)
    start = {**full, "content": [], "stop_reason": None,
             "usage": {**full["usage"], "output_tokens": 1}}
    events = [_sse("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(full["content"]):
        kind = block["type"]
        if kind == "text":
            first, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": block["text"]}]
        elif kind == "thinking":
            first = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]},
                      {"type": "signature_delta", "signature": block.get("signature", "")}]
        elif kind == "tool_use":
            first = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            js = orjson.dumps(block["input"]).decode()
            deltas = [{"type": "input_json_delta", "partial_json": js[:len(js) // 2]},
                      {"type": "input_json_delta", "partial_json": js[len(js) // 2:]}]
        else:
            continue
        events.append(_sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": first}))
        events += [_sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    events += [_sse("ping", {"type": "ping"})] * slow
    events.append(_sse("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": full["stop_reason"], "stop_sequence": None},
                                         "usage": {"output_tokens": 40}}))
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return [(e, 0.05 if slow else 0.0) for e in events]


def openai_completion(message: dict, n: int, prompt: int) -> dict:
    stop = "tool_calls" if message.get("tool_calls") else "stop"
    return {"id": f"chatcmpl-{n:06d}", "object": "chat.completion", "created": 1700000000, "model": "gpt-fake",
            "choices": [{"index": 0, "message": {"content": None, **message, "refusal": None},
                         "finish_reason": stop, "logprobs": None}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 40, "total_tokens": prompt + 40,
                      "prompt_tokens_details": {"cached_tokens": prompt // 2}}}


def openai_chunks(message: dict, n: int, prompt: int, usage: bool, slow: int = 0) -> list[tuple[bytes, float]]:
    full = openai_completion(message, n, prompt)
    base = {"id": full["id"], "object": "chat.completion.chunk", "created": full["created"], "model": full["model"]}

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        return _sse(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]})

    events = [chunk({"role": "assistant", "content": ""})]
    if message.get("content"):
        events.append(chunk({"content": message["content"]}))
    for i, call in enumerate(message.get("tool_calls") or []):
        events.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                             "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]}))
    events += [chunk({})] * slow
    events.append(chunk({}, full["choices"][0]["finish_reason"]))
    if usage:
        events.append(_sse(None, {**base, "choices": [], "usage": full["usage"]}))
    events.append(b"data: [DONE]\n\n")
    return [(e, 0.05 if slow else 0.0) for e in events]


def responses_body(items: list[dict], n: int, prompt: int) -> dict:
    """A Responses API response whose output is `items` (ids added where missing)."""
    output = [{"id": f"item_{n}_{i}", "status": "completed", **item} for i, item in enumerate(items)]
    return {"id": f"resp_{n:06d}", "object": "response", "created_at": 1700000000, "status": "completed",
            "model": "gpt-fake", "output": output,
            "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": prompt // 2},
                      "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": prompt + 40}}


def responses_events(items: list[dict], n: int, prompt: int, slow: int = 0) -> list[tuple[bytes, float]]:
    """The SSE stream of a Responses reply: created, in_progress, each item added/done, completed."""
    full = responses_body(items, n, prompt)
    start = {**full, "status": "in_progress", "output": [], "usage": None}
    seq = iter(range(10**6))
    events = [_sse("response.created", {"type": "response.created", "sequence_number": next(seq), "response": start}),
              _sse("response.in_progress", {"type": "response.in_progress", "sequence_number": next(seq),
                                            "response": start})]
    for i, item in enumerate(full["output"]):
        events.append(_sse("response.output_item.added", {"type": "response.output_item.added", "output_index": i,
                                                          "sequence_number": next(seq), "item": item}))
        events.append(_sse("response.output_item.done", {"type": "response.output_item.done", "output_index": i,
                                                         "sequence_number": next(seq), "item": item}))
    events += [b": keep-alive\n\n"] * slow
    events.append(_sse("response.completed", {"type": "response.completed", "sequence_number": next(seq),
                                              "response": full}))
    return [(e, 0.05 if slow else 0.0) for e in events]


class ServerThread:
    """Serve an ASGI app on 127.0.0.1 (a free port unless given) in a background thread; `options`
    go to uvicorn.Config (the proxy's: `ctxmill.proxy.server.uvicorn_options`)."""

    def __init__(self, app: Any, port: int = 0, **options: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        # log_config None: uvicorn's records propagate to the root logger, where caplog sees them
        options = {"access_log": False, "server_header": False, "date_header": False, "log_config": None,
                   "log_level": "warning", "lifespan": "on", **options}
        config = uvicorn.Config(app, **options)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def main() -> None:
    """`python tests/fake_upstream.py --port N [--delay S] [--usage-factor F]`: serve until killed (benchmark)."""
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--usage-factor", type=float, default=1.0)
    args = p.parse_args()
    fake = FakeUpstream(delay=args.delay, usage_factor=args.usage_factor)
    fake.received = _Discard()  # type: ignore[assignment]  # the benchmark must not grow memory
    fake.sent = _Discard()  # type: ignore[assignment]
    uvicorn.run(fake.app(), host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


class _Discard(list):
    def append(self, item: Any) -> None:
        pass


if __name__ == "__main__":
    main()
