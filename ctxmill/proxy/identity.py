"""Session identity: which stored session a request continues.

key = xxh3_128 of (provider, client id, system prompt, first user message), where the provider
is the request shape (`compress.formats.requests.SHAPES`), the client id is Anthropic
`metadata.user_id` (Claude Code sends one per conversation) or OpenAI `prompt_cache_key` (Codex
sends its session id) / `safety_identifier` / `user`, and "" when absent; the system prompt is
the shape's `SYSTEM_FIELD` and, for OpenAI shapes, the system and developer messages before the
first user message. The system prompt and first user message are always part of the key: side
requests (title generation, sub-agents) share Claude Code's `user_id` but not its conversation,
and a changed system prompt invalidates the provider's prompt cache anyway, so starting a new
session then costs nothing. Cache breakpoints are not part of the key: Claude Code marks the first prompt's last block in its first request
only (`compress.formats.requests.unmarked_messages`).

`request_identity(provider, raw)` reads only those fields from the raw bytes (simdjson parses
lazily: a 0.7 MB body costs the event loop ~0.3 ms instead of ~0.6–1.8 ms for a full parse and
the objects it builds) and gives the same key as `session_key` on the parsed body, and the folder
the client works in from the same fields (`working_directory`: the system prompt, the system and
developer messages, the first user message and the few messages after it, where the clients name
it: `FOLDER_LOOKAHEAD`), never by scanning the whole body. A body that continues a conversation the
provider stores (`previous_response_id`) has no key: the proxy forwards it untouched, as the
pipeline would pass it through.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import simdjson
import xxhash

from compress.formats.requests import SHAPES, unmarked_messages
from compress.formats.requests.shape import stored_history
from ground.jsonbytes import dumps

_OPENAI_ID_FIELDS = ("prompt_cache_key", "safety_identifier", "user")
FOLDER_LOOKAHEAD = 3
"""Messages right after the first user message read for the folder only: Codex's environment
context follows its AGENTS.md message, Claude Code 2.1 sends its context as a `role: "system"`
message after the first prompt."""
_WORKING_DIRECTORY = re.compile(rb'(?:[Ww]orking directory: |<cwd>)([^\\"<\n]{1,1024})')


def client_id(provider: str, body: dict) -> str:
    if provider == "anthropic":
        metadata = body.get("metadata")
        value = metadata.get("user_id") if isinstance(metadata, dict) else None
        return value if isinstance(value, str) else ""
    for name in _OPENAI_ID_FIELDS:
        if isinstance(body.get(name), str):
            return body[name]
    return ""


def _system_and_first_user(provider: str, body: dict) -> tuple[Any, Any]:
    """The system prompt and the first user message; for OpenAI shapes the system prompt takes in
    the system and developer messages before the first user message only (one a client adds later
    in the conversation, Codex's turn context, leaves the session as it is)."""
    shape = SHAPES[provider]
    messages = body.get(shape.MESSAGES_FIELD) or []
    opening: list[dict] = []
    first_user = None
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "user":
            first_user = unmarked_messages(provider, [m])[0]
            break
        opening.append(m)
    prompt = body.get(shape.SYSTEM_FIELD) if shape.SYSTEM_FIELD else None
    if provider == "anthropic":
        return prompt, first_user
    system = [m for m in opening if isinstance(m, dict) and m.get("role") in ("system", "developer")]
    return ([prompt, *system] if prompt is not None else system), first_user


class Identity(NamedTuple):
    key: str | None
    """The session key (`session_key`); None: the body is forwarded as it is."""
    folder: str | None = None
    """The folder the client works in (`working_directory`), if the identifying fields name it."""


def session_key(provider: str, body: dict) -> str | None:
    """32 hex characters; equal for every request of one conversation. None when the body has no
    user message with content: no conversation, nothing to keep (anyone on the machine can post
    such bodies; they must not create session folders)."""
    return _identity(provider, body).key


def _identity(provider: str, body: dict, extra: bytes = b"") -> Identity:
    """The key, and the folder named in the key's fields (or in `extra`, more of the request)."""
    system, first_user = _system_and_first_user(provider, body)
    if not isinstance(first_user, dict) or "content" not in first_user:
        return Identity(None)
    hashed = dumps([provider, client_id(provider, body), system, first_user])
    return Identity(xxhash.xxh3_128(hashed).hexdigest(), working_directory(hashed) or working_directory(extra))


_PARSER = simdjson.Parser()
"""Reused for bodies up to REUSE_LIMIT: one document at a time, read completely before the next
parse (the event loop calls `request_key` synchronously)."""
REUSE_LIMIT = 8 * 2**20
"""A parser keeps buffers as large as the largest document it parsed (about 15 times its size
in address space); a larger body gets a parser of its own, freed with it."""


def mini(value: simdjson.Object | simdjson.Array) -> bytes:
    """simdjson's compact JSON of a parsed object or list."""
    text = value.mini
    return text if isinstance(text, bytes) else str(text).encode()


def _plain(value: Any) -> Any:
    if isinstance(value, simdjson.Object):
        return value.as_dict()
    if isinstance(value, simdjson.Array):
        return value.as_list()
    return value


UNREADABLE = (ValueError, RuntimeError, TypeError)
"""What parsing and reading a body that is not a request can raise (simdjson raises RuntimeError for
DEPTH_ERROR and BIGINT_ERROR)."""


def request_key(provider: str, raw: bytes) -> str | None:
    """`session_key` of the request in `raw` (see `request_identity`)."""
    return request_identity(provider, raw).key


def request_identity(provider: str, raw: bytes) -> Identity:
    """`session_key` of the request in `raw` and the folder it names, or no key when `raw` is not
    a JSON object with a conversation list, continues a conversation the provider stores, or
    holds what the parser cannot represent (nesting past its depth limit, integers past 64 bits,
    invalid UTF-8): such a body is forwarded as it is."""
    try:
        return _request_identity(SHAPES[provider], provider, raw)
    except UNREADABLE:
        return Identity(None)


def _request_identity(shape, provider: str, raw: bytes) -> Identity:
    return document_identity(shape, provider, parse(raw))[0]


def parse(raw: bytes) -> Any:
    """`raw` parsed lazily (`_PARSER`'s one document at a time, up to REUSE_LIMIT); raises what
    simdjson raises for what it cannot parse."""
    return (_PARSER if len(raw) <= REUSE_LIMIT else simdjson.Parser()).parse(raw)


def document_identity(shape, provider: str, doc: Any) -> tuple[Identity, int]:
    """The identity of a parsed request (see `request_identity`), and the index of the message
    where its reading stopped (it reads none after that one), -1 when it read to the end of the
    conversation list or found no conversation."""
    if not isinstance(doc, simdjson.Object):
        return Identity(None), -1
    messages = doc.get(shape.MESSAGES_FIELD)
    if not isinstance(messages, simdjson.Array) or stored_history(shape, doc):
        return Identity(None), -1
    wanted = ("system", "developer") if provider != "anthropic" else ()
    kept: list[dict] = []
    context: list[bytes] = []
    stopped = -1
    for index, message in enumerate(messages):
        obj = message if isinstance(message, simdjson.Object) else None
        role = obj.get("role") if obj is not None else None
        if kept and kept[-1].get("role") == "user":  # past the key's fields: the clients' context messages
            if obj is not None and role in ("system", "developer", "user"):
                context.append(mini(obj))
            if len(context) == FOLDER_LOOKAHEAD or role not in ("system", "developer", "user"):
                stopped = index
                break
        elif obj is not None and (role in wanted or role == "user"):
            kept.append(obj.as_dict())
    fields = (shape.SYSTEM_FIELD, "metadata", *_OPENAI_ID_FIELDS)
    skeleton = {name: _plain(doc.get(name)) for name in fields if name and name in doc}
    return _identity(provider, {**skeleton, shape.MESSAGES_FIELD: kept}, b"".join(context)), stopped


CLIENT_SESSION_HEADERS = ("x-claude-code-session-id", "session-id", "x-session-id")
"""Where the clients name their own session: Claude Code 2.1.332 (`X-Claude-Code-Session-Id`,
the id of its transcript), Codex 0.171.0 (`session-id`, its thread id), OpenCode 1.18.33
(`x-session-id`, `ses_…`)."""
_CLIENT_SESSION = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


def client_session(headers) -> str | None:
    """The session id the client names in its request headers (`CLIENT_SESSION_HEADERS`, the
    first present), when it looks like an id (letters, digits, `_.:-`, at most 128); else None.
    The ledger records it so its sessions match what the user sees in the client, history and
    checkpoints; it never keys the proxy's own session state (`request_identity` does)."""
    for name in CLIENT_SESSION_HEADERS:
        value = headers.get(name)
        if value is not None:
            return value if _CLIENT_SESSION.fullmatch(value) else None
    return None


def working_directory(data: bytes | str) -> str | None:
    """The folder the client says it works in (OpenCode's system prompt: `Working directory:
    PATH`; Claude Code 2.1.332's environment, in a `role: system` message or the system prompt:
    ` - Primary working directory: PATH`; Codex's environment context: `<cwd>PATH</cwd>`), first
    mention in `data` (JSON text of the request's identifying fields); None when it names none.
    Only the ledger's project name and hash are made of it."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    found = _WORKING_DIRECTORY.search(raw)
    return found.group(1).decode("utf-8", "replace").strip() if found else None
