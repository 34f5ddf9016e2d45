"""The ledger written in batches, off the caller's thread: for the proxy and the LiteLLM guardrail.

`LedgerWriter(sink)` takes `RequestRow`s (`add`, never blocks, any thread) and one thread of its
own writes them to `sink` every `interval` seconds (and at once past `batch_rows`): one
connection held open, one transaction per batch. Must hold:
- nothing added before `close()` is lost: `close` writes what is waiting, then closes the sink;
- a crash loses at most the rows of the last `interval` (1 s) and of the batch being written;
- a batch the sink cannot write (a locked or broken file, Redis down) is dropped with one
  warning: the ledger fails open, the requests it counts went through.
Sinks: `FileSink` (the user's SQLite ledger, `ctxmill.ledger.store`) and, with a shared store,
`ctxmill.ledger.team.TeamSink`.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from pathlib import Path
from typing import Protocol

from ctxmill.ledger.store import Ledger, RequestRow

log = logging.getLogger("ctxmill.ledger")

INTERVAL_SECONDS = 1.0
BATCH_ROWS = 500
_TICK = object()


class Sink(Protocol):
    def write(self, rows: list[RequestRow]) -> None: ...
    def close(self) -> None: ...


class FileSink:
    """The SQLite ledger at `path`, on one connection opened on first write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._open: contextlib.ExitStack | None = None
        self._ledger: Ledger | None = None

    def write(self, rows: list[RequestRow]) -> None:
        from ground.sqlitedb import retrying

        def add() -> None:
            if self._ledger is None:
                self._open = contextlib.ExitStack()
                self._ledger = self._open.enter_context(Ledger.open(self.path))
            try:
                self._ledger.add_requests(rows)
            except Exception:
                self.close()  # a broken connection is opened again for the next batch
                raise

        retrying(add)

    def close(self) -> None:
        held, self._open, self._ledger = self._open, None, None
        if held is not None:
            held.close()


class LedgerWriter:
    def __init__(self, sink: Sink, interval: float = INTERVAL_SECONDS, batch_rows: int = BATCH_ROWS) -> None:
        self.sink, self.interval, self.batch_rows = sink, interval, batch_rows
        self._rows: queue.SimpleQueue[RequestRow | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ctxmill-ledger", daemon=True)
        self._thread.start()

    def add(self, row: RequestRow) -> None:
        self._rows.put(row)

    def close(self) -> None:
        """Write every row added so far, then stop (waits for the writing thread)."""
        self._rows.put(None)
        self._thread.join()

    def _run(self) -> None:
        batch: list[RequestRow] = []
        due = 0.0
        while True:
            row: RequestRow | object | None
            try:
                row = self._rows.get(timeout=max(0.0, due - time.monotonic()) if batch else None)
            except queue.Empty:
                row = _TICK
            if row is _TICK or len(batch) >= self.batch_rows:
                self._write(batch)
                batch = []
                if row is _TICK:
                    continue
            if row is None:
                break
            if not batch:
                due = time.monotonic() + self.interval
            batch.append(row)  # type: ignore[arg-type]
        self._write(batch)
        try:
            self.sink.close()
        except Exception as exc:  # noqa: BLE001
            log.warning("ledger not closed cleanly: %s", exc)

    def _write(self, batch: list[RequestRow]) -> None:
        if not batch:
            return
        try:
            self.sink.write(batch)
        except Exception as exc:  # noqa: BLE001 - fail open: the requests went through
            log.warning("ledger: %d rows not written: %s: %s", len(batch), type(exc).__name__, exc)
