"""Shared pieces of the proxy tests: SDK clients that record the raw bytes they receive, and a
replay of the example conversation in Anthropic and OpenAI shape."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "example-request.json"
SECRET = "sk-test-SECRET-7f3a9c"


def _sdk_httpx(sdk: Any):
    """The httpx package the SDK is built on (httpx or a successor with the same API)."""
    return importlib.import_module(sdk.DefaultHttpxClient.__mro__[1].__module__.split(".")[0])


def recording_client(sdk: Any) -> tuple[Any, list[bytearray]]:
    """An SDK-compatible HTTP client and the list of raw response bodies it received."""
    hx = _sdk_httpx(sdk)
    bodies: list[bytearray] = []

    class Tee(hx.SyncByteStream):
        def __init__(self, inner: Any, sink: bytearray) -> None:
            self.inner, self.sink = inner, sink

        def __iter__(self):
            for chunk in self.inner:
                self.sink.extend(chunk)
                yield chunk

        def close(self) -> None:
            self.inner.close()

    class Recording(hx.HTTPTransport):
        def handle_request(self, request: Any) -> Any:
            response = super().handle_request(request)
            sink = bytearray()
            bodies.append(sink)
            return hx.Response(response.status_code, headers=response.headers,
                               stream=Tee(response.stream, sink), extensions=response.extensions)

    return sdk.DefaultHttpxClient(transport=Recording()), bodies


def anthropic_client(base_url: str) -> tuple[anthropic.Anthropic, list[bytearray]]:
    http, bodies = recording_client(anthropic)
    return anthropic.Anthropic(base_url=base_url, api_key=SECRET, max_retries=0, http_client=http), bodies


def openai_client(base_url: str) -> tuple[openai.OpenAI, list[bytearray]]:
    http, bodies = recording_client(openai)
    return openai.OpenAI(base_url=base_url + "/v1", api_key=SECRET, max_retries=0, http_client=http), bodies


def example() -> dict:
    return {**json.loads(EXAMPLE.read_text()), "model": "claude-test"}


def prefix_sender(url: str, body: dict, fake: Any) -> Callable[[int], bytes]:
    """`send(n)`: POST `body` with its first `n` messages to the proxy at `url`; what the fake
    upstream received."""
    import httpx
    import orjson

    def send(n: int) -> bytes:
        r = httpx.post(url + "/v1/messages", content=orjson.dumps({**body, "messages": body["messages"][:n]}),
                       timeout=120)
        assert r.status_code == 200
        return bytes(fake.received[-1].body)

    return send


def to_openai(system: list[dict], messages: list[dict]) -> list[dict]:
    """The example conversation in Chat Completions shape (thinking inline as <think>…</think>)."""
    out: list[dict] = [{"role": "system", "content": " ".join(b["text"] for b in system)}]
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            out.append({"role": m["role"], "content": content})
        elif m["role"] == "user":
            for b in content:
                if b["type"] == "tool_result":
                    text = b["content"] if isinstance(b["content"], str) else "".join(p.get("text", "") for p in b["content"])
                    out.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": text})
                elif b["type"] == "text":
                    out.append({"role": "user", "content": b["text"]})
        else:
            text = "".join(f"<think>{b['thinking']}</think>" if b["type"] == "thinking" else b.get("text", "")
                           for b in content if b["type"] in ("thinking", "text"))
            calls = [{"id": b["id"], "type": "function",
                      "function": {"name": b["name"], "arguments": json.dumps(b["input"])}}
                     for b in content if b["type"] == "tool_use"]
            out.append({"role": "assistant", "content": text or None, **({"tool_calls": calls} if calls else {})})
    return out


def replay(messages: list[dict], is_reply: Callable[[dict], bool], send: Callable[[list[dict], dict], dict]) -> list[dict]:
    """Play a recorded conversation: every message `is_reply` says the model wrote is what the
    upstream answers; the client continues with what the SDK returned. Returns the history."""
    history: list[dict] = []
    for msg in messages:
        history.append(send(history, msg) if is_reply(msg) else msg)
    return history


def tool_ids(body: dict) -> list[tuple[str, str]]:
    """(kind, id) of every tool call and result, in order, in either provider's shape."""
    out = []
    for m in body["messages"]:
        for call in m.get("tool_calls") or []:
            out.append(("use", call["id"]))
        if m.get("role") == "tool":
            out.append(("result", m["tool_call_id"]))
        if isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_use":
                    out.append(("use", b["id"]))
                elif b.get("type") == "tool_result":
                    out.append(("result", b["tool_use_id"]))
    return out


def paired(ids: list[tuple[str, str]]) -> bool:
    seen: set[str] = set()
    for kind, i in ids:
        if kind == "use":
            seen.add(i)
        elif i not in seen:
            return False
    return True
