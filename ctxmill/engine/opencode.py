"""The OpenCode side of the engine: one turn's messages in, part edits out; checkpoints at compaction.

Per OpenCode session (its `sessionID`) the engine keeps a `compress.Session` in memory, its state
under `<project home>/sessions/opencode-<id>/` (reloaded when another process changed it, saved
after each run under the directory's file lock), the last messages it saw and the person's first
prompt (`prompt.txt` there, secrets redacted: OpenCode drops it from the history at compaction). Must hold:
nothing raises out of `transform` / `compacting`: a failure gives no edits / no context, and
the plugin sends the messages unchanged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("ctxmill.engine")

MAX_SESSIONS = 64
PROMPT_FILE = "prompt.txt"


def safe_id(session_id: str) -> str:
    from memory.checkpoint import session_id_for

    return session_id_for(None, session_id)


@dataclass
class LiveSession:
    directory: Path
    lock: threading.Lock = field(default_factory=threading.Lock)
    state: Any = None  # compress.state.session.Session
    messages: list = field(default_factory=list)

    def session(self):
        from compress.state.session import Session

        if self.state is None or self.state.changed_on_disk():
            self.state = Session.load(self.directory)
        return self.state


class OpenCodeEngine:
    """Transforms and checkpoints for every project on the machine (the request names its folder)."""

    def __init__(self) -> None:
        self.sessions: OrderedDict[tuple[Path, str], LiveSession] = OrderedDict()
        self.stores: dict[Path, Any] = {}
        self._guard = threading.Lock()

    def _home(self, directory: Any) -> Path:
        from ctxmill.paths import project_home

        return project_home(Path(directory) if isinstance(directory, str) and directory else None)

    def _live(self, home: Path, session_id: str) -> LiveSession:
        key = (home, safe_id(session_id))
        with self._guard:
            live = self.sessions.get(key)
            if live is None:
                live = self.sessions[key] = LiveSession(home / "sessions" / f"opencode-{key[1]}")
                while len(self.sessions) > MAX_SESSIONS:
                    self.sessions.popitem(last=False)
            self.sessions.move_to_end(key)
            return live

    def _store(self, settings):
        """The CCR store of `settings` (the user's, shared by every face), opened once per folder."""
        with self._guard:
            store = self.stores.get(settings.ccr_dir)
            if store is None:
                store = self.stores[settings.ccr_dir] = settings.open_ccr()
            return store

    def transform(self, request: dict) -> dict:
        """`{directory, sessionID, messages, model?, window?}` -> `{edits, summary}`."""
        try:
            return self._transform(request)
        except Exception as exc:  # noqa: BLE001 - fail open: the plugin sends the messages as they are
            log.warning("opencode transform failed, messages sent unchanged: %s: %s", type(exc).__name__, exc)
            return {"edits": [], "error": f"{type(exc).__name__}: {exc}"[:300]}

    def _transform(self, request: dict) -> dict:
        from compress.formats.opencode_live import edits, first_prompt, to_body
        from compress.runner.pipeline import run
        from compress.state.session import state_lock
        from ctxmill.ledger import project_of, record_request
        from ctxmill.paths import ensure_gitignore, ledger_file
        from ctxmill.settings import Settings
        from ground.files import atomic_write, private_dir
        from ground.redact import redact

        messages = request.get("messages")
        session_id = request.get("sessionID")
        if not isinstance(messages, list) or not isinstance(session_id, str) or not session_id:
            raise ValueError("a transform needs `sessionID` and a `messages` list")
        settings = Settings.load(self._home(request.get("directory")))
        live = self._live(settings.home, session_id)
        body, origins = to_body(messages, str(request.get("model") or ""))
        window = request.get("window")
        with live.lock:
            ensure_gitignore(settings.home)  # the first turn in a fresh repository creates the home
            private_dir(live.directory)
            live.messages = messages
            prompt = first_prompt(messages)
            prompt_path = live.directory / PROMPT_FILE
            if prompt and not prompt_path.exists():  # redacted: nothing secret is kept at rest
                atomic_write(prompt_path, redact(prompt, **settings.redaction).encode("utf-8"))
            with state_lock(live.directory):
                result = run(body, session=live.session(), store=self._store(settings), config=settings.compress,
                             context_window=window if isinstance(window, int) and window > 0 else None,
                             now=time.time())
                live.state.save()
        report = result.report
        if not report.error:
            record_request(face="opencode", session=safe_id(session_id),
                           project=project_of(request.get("directory") or settings.home.parent),
                           model=str(request.get("model") or ""), vendor="", tokens_before=report.tokens_before,
                           tokens_after=report.tokens_after, stages=report.stages_saved,
                           path=ledger_file(settings.global_home))
        return {"edits": edits(origins, body, result.body), "summary": report.summary_line()}

    def compacting(self, request: dict) -> dict:
        """`{directory, sessionID}` -> `{context: [text]}`: write the checkpoint of what the session
        holds now and give the lines OpenCode adds to its summary prompt (the person's first
        request among them)."""
        try:
            return self._compacting(request)
        except Exception as exc:  # noqa: BLE001 - fail open: compaction goes on without us
            log.warning("opencode compacting: no checkpoint: %s: %s", type(exc).__name__, exc)
            return {"context": [], "error": f"{type(exc).__name__}: {exc}"[:300]}

    def _compacting(self, request: dict) -> dict:
        from compress.formats.opencode_live import as_export, first_prompt
        from compress.formats.sessions.opencode import read_object
        from ctxmill.settings import Settings
        from ground.home_files import PROMPT_BYTES, read_home_file
        from memory.checkpoint import write_checkpoint
        from memory.summary import latest_summary

        session_id = request.get("sessionID")
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("compacting needs `sessionID`")
        settings = Settings.load(self._home(request.get("directory")))
        live = self._live(settings.home, session_id)
        with live.lock:
            messages = list(live.messages)
            try:  # bounded, inside the home (ground.home_files)
                name = live.directory.relative_to(settings.home) / PROMPT_FILE
                prompt = (read_home_file(settings.home, name, PROMPT_BYTES) or b"").decode("utf-8")
            except (OSError, UnicodeDecodeError, ValueError):
                prompt = ""
        if prompt and not first_prompt(messages):  # compacted before: put the first request back in front
            messages.insert(0, {"id": "ctxmill-first-prompt", "role": "user",
                                "parts": [{"type": "text", "text": prompt}]})
        context = []
        if messages:
            transcript = read_object(as_export(session_id, messages))
            self._keep_history(settings, transcript, session_id, request.get("directory"))
            write_checkpoint(settings.checkpoint, transcript, safe_id(session_id), "opencode")
            summary = latest_summary(settings.home)
            if summary:
                context.append("ctxmill checkpoint of this session (full text: .ctxmill/checkpoint.md):\n" + summary)
        if prompt:
            context.append("The person's original request, word for word (keep it in the summary):\n" + prompt)
        return {"context": context}

    @staticmethod
    def _keep_history(settings, transcript, session_id: str, directory) -> None:
        """The session's new messages into history (`[history] enabled`); a failure is logged only."""
        from memory.history.ingest import ingest_transcript

        try:
            project = directory if isinstance(directory, str) and directory else str(settings.home.parent)
            ingest_transcript(settings.history, transcript, safe_id(session_id), project, "opencode")
        except Exception as exc:  # noqa: BLE001 - compaction goes on without history
            log.warning("opencode compacting: history not kept: %s: %s", type(exc).__name__, exc)

    def close(self) -> None:
        for store in self.stores.values():
            store.close()
        self.stores.clear()
