"""Checkpoint: a Markdown summary of a session that survives the host's compaction.

`checkpoint_file(cfg, path)` reads a session in any format compress.formats.sessions reads;
`write_checkpoint(cfg, transcript, session_id)` writes, under the project home:
- `checkpoint.md` (the latest checkpoint) and `sessions/<id>/checkpoint.md` (same text), with
  sections Task, Progress, Decisions, Constraints, Files changed, Errors → fixes, Next steps,
  Critical context;
- `sessions/<id>/checkpoint.raw.json`: the session's raw messages, every string redacted.
Detail the checkpoint leaves out (long requests, error output, older requests, the full last
reply) goes to the CCR store and is named by a `deep_expand("key")` marker. Decisions,
constraints and gotchas are offered to memory: appended to notes.md (tag `checkpoint`) unless
MEMORY.md or notes.md already holds a near-duplicate (memory.similar) or it is not a complete
statement about this project (memory.statements.flaw). Deterministic for a
given session apart from the date line.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import regex

from ccr.base import OriginalsStore
from ccr.markers import format_marker
from ccr.store import Retention
from ccr.stores import open_store
from ground.files import atomic_write, private_dir
from ground.redact import redact
from ground.redis_client import StoreAddress
from memory import api
from memory.config import MemoryConfig
from memory.entry import Entry
from memory.extract import Extraction, extract
from memory.fixes import Gotcha
from memory.similar import DUPLICATE, overlap, terms
from memory.statements import flaw
from memory.summary import CHECKPOINT_FILE

RAW_FILE = "checkpoint.raw.json"
SECTIONS = ("Task", "Progress", "Decisions", "Constraints", "Files changed", "Errors → fixes", "Next steps",
            "Critical context")
_SAFE_ID = regex.compile(r"[^\w.-]+")


@dataclass(frozen=True)
class CheckpointConfig:
    """memory: where MEMORY.md / notes.md / checkpoints live (memory.project_home); ccr_dir: the CCR store
    (ccr_store: a shared Redis store instead, `ccr.stores.open_store`)."""

    memory: MemoryConfig
    ccr_dir: Path
    ccr_retention: Retention = Retention()
    ccr_store: StoreAddress | None = None
    max_requests: int = 8  # user requests listed under Progress (older ones go to CCR)
    max_items: int = 20  # per section
    line_chars: int = 240  # one bullet; longer text is cut and its original stored in CCR
    task_chars: int = 800
    next_step_turns: int = 3  # "next …" sentences count from the agent's last this many replies (messages with text)
    offer_limit: int = 10  # per type, offered to notes.md per checkpoint


@dataclass
class CheckpointResult:
    session_id: str
    markdown: str
    paths: list[Path]
    ccr_keys: list[str] = field(default_factory=list)
    offered: list[Entry] = field(default_factory=list)


def session_id_for(path: str | Path | None, given: str | None = None) -> str:
    """A file-name-safe session id: the host's id when given, else the session file's stem."""
    raw = given or (Path(path).stem if path else "") or "session"
    return _SAFE_ID.sub("-", raw).strip("-.")[:120] or "session"


def _redact_value(value: Any, redact_extra, redact_allow=()) -> Any:
    if isinstance(value, str):
        return redact(value, redact_extra, redact_allow)
    if isinstance(value, list):
        return [_redact_value(v, redact_extra, redact_allow) for v in value]
    if isinstance(value, dict):
        return {k: _redact_value(v, redact_extra, redact_allow) for k, v in value.items()}
    return value


class _Writer:
    """Renders sections; cuts long text and keeps the original in the CCR batch. Every text is
    redacted before it is cut or stored, so no part of a secret reaches the checkpoint or CCR."""

    def __init__(self, cfg: CheckpointConfig, store: OriginalsStore) -> None:
        self.cfg, self.store = cfg, store
        self.keys: list[str] = []

    def clean(self, text: str) -> str:
        return redact(text, self.cfg.memory.redact_extra, self.cfg.memory.redact_allow)

    def keep(self, text: str, hint: str) -> str:
        key = self.store.put(self.clean(text), self.clean(hint))
        self.keys.append(key)
        return key

    def cut(self, text: str, limit: int, hint: str) -> str:
        flat = " ".join(self.clean(text).split())
        if len(flat) <= limit:
            return flat
        key = self.keep(text, hint)
        return flat[:limit].rstrip() + "… " + format_marker(f"{len(flat)} chars", key)

    def bullets(self, items: list[str], hint: str) -> list[str]:
        """The last `max_items` as bullets; earlier ones are stored and named by one marker."""
        shown = items[-self.cfg.max_items :]
        lines = [f"- {self.cut(item, self.cfg.line_chars, hint)}" for item in shown]
        if len(items) > len(shown):
            hidden = items[: len(items) - len(shown)]
            key = self.keep("\n".join(f"- {i}" for i in hidden), f"checkpoint: earlier {hint}")
            lines.insert(0, "- " + format_marker(f"{len(hidden)} earlier {hint}", key))
        return lines


def _task(w: _Writer, ex: Extraction) -> list[str]:
    if not ex.intents:
        return ["(no user request recorded)"]
    lines = [w.cut(ex.intents[0].text, w.cfg.task_chars, "checkpoint: first request")]
    if len(ex.intents) > 1:
        lines.append("")
        lines.append("Latest request: " + w.cut(ex.intents[-1].text, w.cfg.task_chars, "checkpoint: latest request"))
    return lines


def _progress(w: _Writer, ex: Extraction) -> list[str]:
    lines = [f"- {ex.turns} assistant turns, {ex.tool_calls} tool calls, {len(ex.files)} files changed."]
    lines += [f"- [x] {t}" for t in ex.todos_done[-w.cfg.max_items :]]
    requests = [s.text for s in ex.intents]
    if len(requests) > 1:
        lines.append(f"- Requests so far ({len(requests)}):")
        shown = requests[-w.cfg.max_requests :]
        if len(requests) > len(shown):
            hidden = "\n\n".join(requests[: len(requests) - len(shown)])
            key = w.keep(hidden, "checkpoint: earlier requests")
            lines.append("  - " + format_marker(f"{len(requests) - len(shown)} earlier requests", key))
        lines += [f"  - {w.cut(r, w.cfg.line_chars, 'checkpoint: request')}" for r in shown]
    for refusal in ex.refusals[-w.cfg.max_items:]:
        why = f": {w.cut(refusal.reason, w.cfg.line_chars, 'checkpoint: refusal')}" if refusal.reason else ""
        lines.append(f"- Refused: {w.cut(refusal.call, w.cfg.line_chars // 2, 'checkpoint: refused call')}{why}")
    if ex.last_reply is not None:
        lines.append("- Last reply: " + w.cut(ex.last_reply.text, w.cfg.line_chars * 2, "checkpoint: last reply"))
    return lines


def _files(ex: Extraction) -> list[str]:
    return [f"- `{path}` — {', '.join(actions)}" for path, actions in ex.files.items()]


def _gotcha_line(w: _Writer, g: Gotcha) -> str:
    error = w.cut(g.error, w.cfg.line_chars // 2, "checkpoint: error")
    marker = ""
    if g.detail.strip() and " ".join(g.detail.split()) != " ".join(g.error.split()):
        marker = " " + format_marker("full error output", w.keep(g.detail, f"checkpoint: error turn {g.turn}"))
    fix = f" → fixed by {w.cut(g.fix, w.cfg.line_chars // 2, 'checkpoint: fix')}" if g.fix else " → not fixed yet"
    return f"- `{error}`{fix}{marker}"


def _next_steps(w: _Writer, ex: Extraction) -> list[str]:
    replies = set(ex.reply_turns[-w.cfg.next_step_turns:])
    recent = [s.text for s in ex.next_steps if s.turn in replies]
    first = []
    if ex.unfinished is not None:  # the session stopped while the agent was still at work on it
        first = ["- [ ] Unfinished, the latest request: "
                 + w.cut(ex.unfinished.text, w.cfg.line_chars, "checkpoint: latest request")]
    return first + [f"- [ ] {t}" for t in ex.todos_open] + w.bullets(recent, "next steps")


def _errors(ex: Extraction) -> list[Gotcha]:
    """Fixed and unfixed errors in session order, one line per error."""
    return _distinct(sorted(ex.gotchas + ex.unresolved_errors, key=lambda g: g.turn))


def _distinct(gotchas: list[Gotcha]) -> list[Gotcha]:
    """One line per error: a repeated error keeps its last fix (or its last occurrence)."""
    by_error: dict[str, Gotcha] = {}
    for g in gotchas:
        key = " ".join(g.error.split())
        if g.fix or key not in by_error or not by_error[key].fix:
            by_error.pop(key, None)
            by_error[key] = g
    return list(by_error.values())


def _critical(w: _Writer, ex: Extraction, raw_path: str, unread: int = 0) -> list[str]:
    lines = w.bullets([s.text for s in ex.critical], "critical notes")
    if unread:
        lines.append(f"- {unread} line(s) of the recording were too long to read whole (a huge tool output?): "
                     "only their start and end are covered")
    fixed = {" ".join(g.error.split()) for g in ex.gotchas}
    recent_errors = [g for g in _distinct(ex.unresolved_errors) if g.turn > ex.turns - w.cfg.next_step_turns
                     and " ".join(g.error.split()) not in fixed]
    lines += [_gotcha_line(w, g) for g in recent_errors[-3:]]
    lines.append(f"- Raw messages (secrets redacted): `{raw_path}`")
    return lines


def render(cfg: CheckpointConfig, ex: Extraction, store: OriginalsStore, session_id: str, source: str, unread: int = 0
           ) -> tuple[str, list[str]]:
    """The checkpoint Markdown and the CCR keys it names; `unread`: lines of the recording cut or left out."""
    w = _Writer(cfg, store)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = {
        "Task": _task(w, ex),
        "Progress": _progress(w, ex),
        "Decisions": w.bullets([s.text for s in ex.decisions], "decisions"),
        "Constraints": w.bullets([s.text for s in ex.constraints], "constraints"),
        "Files changed": _files(ex),
        "Errors → fixes": [_gotcha_line(w, g) for g in _errors(ex)[-cfg.max_items :]],
        "Next steps": _next_steps(w, ex),
        "Critical context": _critical(w, ex, f"sessions/{session_id}/{RAW_FILE}", unread),
    }
    out = [f"# Checkpoint: session {session_id}", "", f"_{stamp} · from `{source}` · ctxmill checkpoint_", ""]
    for name in SECTIONS:
        out += [f"## {name}", "", *(body[name] or ["(none)"]), ""]
    return w.clean("\n".join(out)), w.keys


def _candidates(ex: Extraction) -> list[tuple[str, str]]:
    """(type, text) offered to memory, oldest first."""
    found = [("decision", s.text) for s in ex.decisions] + [("constraint", s.text) for s in ex.constraints]
    found += [("gotcha", " ".join(f"{g.error} → fixed by {g.fix}".split())) for g in ex.gotchas]
    return found


def offer_to_memory(cfg: CheckpointConfig, ex: Extraction, session_id: str) -> list[Entry]:
    """Append new decisions/constraints/gotchas to notes.md; near-duplicates of memory are skipped."""
    tok = api.tokenizer(cfg.memory)
    known = [terms(e.text, tok) for e in api.list_entries(cfg.memory, "project")]
    offered: list[Entry] = []
    per_type: dict[str, int] = {}
    root = cfg.memory.project_home.resolve().parent
    for kind, text in _candidates(ex):
        if flaw(text, kind, root, Path.home()):  # narration, a fragment, another machine's path…: dream would leave it out
            continue
        mine = terms(text, tok)
        if per_type.get(kind, 0) >= cfg.offer_limit or any(overlap(mine, k) >= DUPLICATE for k in known):
            continue
        try:
            entry = api.store(cfg.memory, kind, text, tags=("checkpoint", session_id), notes=True)
        except api.BadInput:  # too long for memory: the checkpoint keeps it
            continue
        offered.append(entry)
        known.append(mine)
        per_type[kind] = per_type.get(kind, 0) + 1
    return offered


def write_checkpoint(cfg: CheckpointConfig, transcript, session_id: str, source: str = "", offer: bool = True
                     ) -> CheckpointResult:
    """Write checkpoint.md, sessions/<id>/checkpoint.md and checkpoint.raw.json for a Transcript."""
    from compress.formats.requests import from_provider
    from compress.formats.sessions import OVERSIZED

    # redacted before anything is extracted: a summary line joins a secret's lines, and a wrapped
    # or block-shaped secret no longer has the shape redaction knows it by
    raw = _redact_value(transcript.messages, cfg.memory.redact_extra, cfg.memory.redact_allow)
    request = from_provider(replace(transcript, messages=raw).whole(), transcript.provider)
    ex = extract(request.messages)
    home = cfg.memory.project_home
    folder = home / "sessions" / session_id
    with open_store(cfg.ccr_dir, cfg.ccr_retention, cfg.ccr_store) as store, store.batch() as batch:
        markdown, keys = render(cfg, ex, batch, session_id, source or transcript.format,
                                transcript.skipped[OVERSIZED])
    private_dir(folder)
    raw_path, session_md, latest = folder / RAW_FILE, folder / CHECKPOINT_FILE, home / CHECKPOINT_FILE
    atomic_write(raw_path, orjson.dumps({"session_id": session_id, "format": transcript.format, "messages": raw}))
    atomic_write(session_md, markdown.encode("utf-8"))
    atomic_write(latest, markdown.encode("utf-8"))
    offered = offer_to_memory(cfg, ex, session_id) if offer else []
    return CheckpointResult(session_id, markdown, [latest, session_md, raw_path], keys, offered)


def checkpoint_file(cfg: CheckpointConfig, path: str | Path, session_id: str | None = None, fmt: str | None = None,
                    offer: bool = True) -> CheckpointResult:
    """Checkpoint the session recorded in `path` (OSError / compress.formats.UnknownFormat on bad input)."""
    from compress.formats.sessions import read_session

    transcript = read_session(path, fmt)
    return write_checkpoint(cfg, transcript, session_id_for(path, session_id), str(path), offer)
