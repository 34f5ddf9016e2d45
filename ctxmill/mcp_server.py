"""The ctxmill MCP server (stdio, official `mcp` SDK): CCR expansion, project memory, checkpoints.

Every tool raises ToolError with a one-line message on bad input or a failed operation; the SDK
returns it as a tool error (`isError: true`) and the server keeps running. Every request gets an
answer: one the SDK cannot read (arguments nested deeper than its validator goes, a malformed
envelope) would be dropped silently, leaving the client waiting, so it reaches the SDK as a call
of a method that does not exist, named for the reason (`answerable`), and is answered with an error.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator
from typing import TYPE_CHECKING

import orjson
from mcp import types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server

if TYPE_CHECKING:
    from ctxmill.settings import Settings

INSTRUCTIONS = (
    "ctxmill keeps the originals of context it compressed and the project's durable memory. "
    'When you see [ctxmill: … · deep_expand("KEY")] call deep_expand with that KEY. '
    "history_search finds what earlier sessions said (every message, not only memory); history_get reads it."
)


class _Server(MCPServer):
    async def run_stdio_async(self) -> None:
        """MCPServer's stdio loop, reading stdin through `answerable`."""
        import sys

        import anyio

        # opening wraps the already-open fd 0 and reads nothing; anyio reads it off the loop
        lines = anyio.wrap_file(open(sys.stdin.fileno(), encoding="utf-8", errors="replace", closefd=False))  # noqa: ASYNC230
        async with stdio_server(stdin=_Answerable(lines)) as (read, write):  # type: ignore[arg-type]
            await self._lowlevel_server.run(read, write, self._lowlevel_server.create_initialization_options())


class _Answerable:
    def __init__(self, lines: AsyncIterable[str]) -> None:
        self.lines = lines

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self.lines:
            yield answerable(line)


_LEADING_ID = re.compile(r'^\s*\{\s*(?:"jsonrpc"\s*:\s*"[^"]*"\s*,\s*)?"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,18})')


def answerable(line: str) -> str:
    """`line`, or, when the SDK cannot read it but it carries a request id, a request for the
    method "ctxmill/unreadable-request: WHY" under that id (the SDK answers "method not found")."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return line
    except ValueError as exc:  # pydantic's ValidationError names the first problem in errors()
        problems = exc.errors() if hasattr(exc, "errors") else []
        why = (problems[0]["msg"] if problems else str(exc).splitlines()[0])[:200]
    try:
        message = orjson.loads(line)
        request_id = message.get("id") if isinstance(message, dict) and "method" in message else None
    except orjson.JSONDecodeError:  # nested deeper than orjson reads: the id as clients write it, first
        found = _LEADING_ID.match(line)
        request_id = orjson.loads(found.group(1)) if found else None
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        return line  # a notification or no message at all: nothing to answer
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": f"ctxmill/unreadable-request: {why}"}).decode()


def build_server(settings: Settings) -> MCPServer:
    from ctxmill import package_version

    server = _Server("ctxmill", instructions=INSTRUCTIONS, version=package_version())
    memory_cfg = settings.memory

    @server.tool()
    def deep_expand(key: str, lines: str | None = None, grep: str | None = None) -> str:
        """Return the original text behind a ctxmill marker [ctxmill: … · deep_expand("KEY")].

        key: the 32-hex-digit key inside deep_expand("…"). lines: optional 1-based inclusive
        range "120:180", "120:" or ":50". grep: optional regex; only matching lines are returned.
        With lines or grep each line is prefixed with its line number in the original."""
        from ccr.expand import expand_first
        from ccr.store import CCRError

        try:
            result = expand_first(settings.ccr_read_dirs, key, lines=lines, grep=grep, retention=settings.ccr,
                                  shared=settings.store)
        except CCRError as exc:
            raise ToolError(str(exc)) from None
        if not result.ok:
            raise ToolError(result.message)
        from ctxmill.ledger import project_of, record_expansion
        from ctxmill.paths import ledger_file, project_root

        record_expansion(face="mcp", chars=len(result.text or ""), project=project_of(project_root()),
                         path=ledger_file(settings.global_home))
        return result.text or ""

    @server.tool()
    def memory_search(query: str, limit: int = 5) -> list[dict]:
        """Search the project's and the global durable memory (MEMORY.md, notes.md) with BM25.

        Returns the best `limit` entries (1-50), best first: id, type, text, score, pinned, tags."""
        from memory import api

        try:
            hits = api.search(memory_cfg, query, limit=max(1, min(int(limit), 50)))
        except api.BadInput as exc:
            raise ToolError(str(exc)) from None
        from datetime import date

        from memory import usage

        usage.record(memory_cfg, [hit.entry.id for hit in hits], date.today().isoformat())  # ranks session start's memory
        return [hit.to_dict() for hit in hits]

    @server.tool()
    def memory_store(type: str, text: str, pin: bool = False, tags: list[str] | None = None) -> dict:
        """Store a durable memory entry in the project's MEMORY.md (secrets are redacted).

        type: constraint | decision | gotcha | fact | note. pin: inject it at every session start.
        tags: short words (letters, digits, '_', '.', '-'). Returns the stored entry with its id."""
        from memory import api

        try:
            return api.store(memory_cfg, type, text, pin=pin, tags=tags or ()).to_dict()
        except api.BadInput as exc:
            raise ToolError(str(exc)) from None

    @server.tool()
    def memory_forget(id: str) -> str:
        """Remove the memory entry with this id (as returned by memory_search / memory_store)."""
        from memory import api

        try:
            entry = api.forget(memory_cfg, id)
        except api.NotFound as exc:
            raise ToolError(str(exc)) from None
        return f"forgot {entry.id}: {entry.text}"

    @server.tool()
    def checkpoint(transcript_path: str | None = None) -> str:
        """Write a checkpoint of the current session to .ctxmill/checkpoint.md and return it.

        The checkpoint lists task, progress, decisions, constraints, files changed, errors and
        fixes, next steps. transcript_path: optional session file; default: the live Claude Code
        session recorded by the ctxmill hooks."""
        from compress.formats.sessions import UnknownFormat
        from ctxmill.hooks import current_session
        from memory.checkpoint import checkpoint_file

        session_id = None
        if not transcript_path:
            live = current_session(settings.home)
            if live is None:
                raise ToolError("no live session recorded (install the hooks); pass transcript_path")
            transcript_path, session_id = live["transcript_path"], live.get("session_id")
        from ctxmill.paths import ensure_gitignore

        ensure_gitignore(settings.home)
        try:
            result = checkpoint_file(settings.checkpoint, transcript_path, session_id)
        except (OSError, UnknownFormat) as exc:
            raise ToolError(f"{transcript_path}: {exc}") from None
        return result.markdown

    @server.tool()
    def history_search(query: str, regex: bool = False, project: str | None = None, session: str | None = None,
                       since: str | None = None, until: str | None = None, limit: int = 10) -> dict:
        """Search every past session's messages (all projects; secrets were redacted), not only memory.

        query: words (any may match, best first; Chinese and Japanese work too) or, with regex=true,
        a regular expression (newest sessions first). project: a project's path or folder name.
        session: a session key or its start. since / until: 7d, 12h or an ISO date (when the session
        was last active). Returns hits {session, seq, role, project, updated, snippet}; read a hit in
        full with history_get(session, seq)."""
        from ctxmill.history_tools import HistoryToolError, search_tool

        try:
            return search_tool(settings, query, regex, project, session, since, until, limit)
        except HistoryToolError as exc:
            raise ToolError(str(exc)) from None

    @server.tool()
    def history_get(session: str, messages: str, context: int = 2) -> list[dict]:
        """Read messages of a past session from history: a message ("12") or a range ("10:20"),
        with `context` neighbours on each side (0-20). session: as history_search returns it."""
        from ctxmill.history_tools import HistoryToolError, get_tool

        try:
            return get_tool(settings, session, messages, context)
        except HistoryToolError as exc:
            raise ToolError(str(exc)) from None

    return server


def serve(settings: Settings) -> None:
    build_server(settings).run("stdio")
