"""Session state that keeps compressed output stable between epochs.

For every message the session remembers how it was rendered, keyed by the hash of the whole
message prefix up to and including it (the same thing a provider's prompt cache keys on).
Between epochs a known prefix is rendered exactly as before, so the compressed request k is a
byte prefix of request k+1 apart from new messages.

On disk (`<dir>/state.jsonl`): line 1 is the epoch header; each further line is a message record
or a header update. An epoch rewrites the file (temp file + rename); a run between epochs
appends. A torn last line (crash while appending) is ignored on load. Every process that
loads, runs on or saves a session's state holds the directory's file lock (`state_lock(dir)`;
`Session.open(dir)` holds it from load to save), so they take turns. A process that keeps a
session in memory between runs reloads it when `changed_on_disk()`.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import orjson
import xxhash

from ground.files import atomic_write, private_lock
from ground.jsonbytes import dumps

if TYPE_CHECKING:
    from filelock import FileLock

STATE_FILE = "state.jsonl"
LOCK_FILE = "state.lock"
VERSION = 1


def state_lock(path: Path) -> FileLock:
    """The file lock of the session directory `path`: held around every load, run and save."""
    return private_lock(Path(path) / LOCK_FILE)


@dataclass(slots=True)
class Record:
    """How one message (identified by its prefix hash) is rendered in the current epoch.

    settled: it was decided outside the protected tail, so a re-run would not find more in it
    compressible: tokens of the blocks a stage could shorten
    """

    rendered: Any
    raw_tokens: int
    out_tokens: int
    compressible: int
    settled: bool


@dataclass(slots=True)
class Header:
    version: int = VERSION
    provider: str = ""
    epoch: int = 0
    tier: int = -1
    anchor_turn: int = 0
    next_trial_at: int = 0


@dataclass
class Session:
    path: Path | None = None
    header: Header = field(default_factory=Header)
    records: dict[str, Record] = field(default_factory=dict)
    request_ends: list[int] = field(default_factory=list)
    """Message counts of the requests rendered since their messages last changed: their
    renderings are what the provider has cached."""
    parsed: dict[str, Any] = field(default_factory=dict, repr=False)
    """Canonical messages by prefix hash, kept in memory only, so a long-lived process parses
    only new messages."""
    _pending: list[bytes] = field(default_factory=list, repr=False)
    _rewrite: bool = field(default=False, repr=False)
    _signature: tuple[int, int] | None = field(default=None, repr=False)
    """The state file's (mtime, size) when this session last loaded or saved it."""

    @classmethod
    def memory(cls) -> "Session":
        return cls()

    @classmethod
    def load(cls, path: Path) -> "Session":
        session = cls(path=Path(path))
        session._signature = _file_signature(session.path)
        try:
            data = (session.path / STATE_FILE).read_bytes()
        except FileNotFoundError:
            return session
        lines = data.split(b"\n")
        try:
            header = orjson.loads(lines[0])
        except orjson.JSONDecodeError:
            return session  # unreadable state: start a new epoch, never trust it
        if header.get("version") != VERSION:
            return session
        session.header = Header(**{k: header[k] for k in asdict(Header()) if k in header})
        for line in lines[1:]:
            if not line:
                continue
            try:
                item = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # torn last line
            if "h" in item:
                session.records[item["h"]] = Record(item["r"], item["rt"], item["ot"], item["c"], item["s"])
            elif "next_trial_at" in item:
                session.header.next_trial_at = item["next_trial_at"]
            elif "end" in item:
                session.request_ends.append(item["end"])
        return session

    @classmethod
    @contextlib.contextmanager
    def open(cls, path: Path) -> Iterator["Session"]:
        """Load under the session's file lock and save on a clean exit."""
        path = Path(path)
        with state_lock(path):
            session = cls.load(path)
            yield session
            session.save()

    # -- changes -----------------------------------------------------------------

    def start_epoch(self, provider: str, tier: int, anchor_turn: int, records: dict[str, Record],
                    unchanged: int = 0) -> None:
        """`unchanged`: the epoch renders the first this many messages as before, so the requests
        that ended there stay cached."""
        self.header = Header(provider=provider, epoch=self.header.epoch + 1, tier=tier,
                             anchor_turn=anchor_turn, next_trial_at=0)
        self.records = dict(records)
        self.request_ends = [e for e in self.request_ends if e <= unchanged]
        self.parsed = {h: m for h, m in self.parsed.items() if h in self.records}
        self._pending.clear()
        self._rewrite = True

    def add(self, prefix_hash: str, record: Record) -> None:
        self.records[prefix_hash] = record
        self._pending.append(_record_line(prefix_hash, record))

    def add_request_end(self, messages: int) -> None:
        if not self.request_ends or self.request_ends[-1] != messages:
            self.request_ends.append(messages)
            self._pending.append(dumps({"end": messages}))

    def set_next_trial(self, tokens: int) -> None:
        self.header.next_trial_at = tokens
        self._pending.append(dumps({"next_trial_at": tokens}))

    # -- persistence ---------------------------------------------------------------

    def changed_on_disk(self) -> bool:
        """Whether another process wrote the state file since this session loaded or saved it."""
        return self.path is not None and _file_signature(self.path) != self._signature

    def save(self) -> None:
        if self.path is None:
            self._pending.clear()
            self._rewrite = False
            return
        target = self.path / STATE_FILE
        if self._rewrite or not target.exists():
            lines = [dumps(asdict(self.header))]
            lines += [_record_line(h, r) for h, r in self.records.items()]
            lines += [dumps({"end": n}) for n in self.request_ends]
            atomic_write(target, b"\n".join(lines) + b"\n")
        elif self._pending:
            with open(target, "ab+") as fh:
                torn = fh.tell() > 0 and fh.seek(-1, os.SEEK_END) >= 0 and fh.read(1) != b"\n"
                # After a crash mid-append, end the torn line first so the new records stay whole.
                fh.write((b"\n" if torn else b"") + b"\n".join(self._pending) + b"\n")
                fh.flush()
                os.fsync(fh.fileno())
        self._pending.clear()
        self._rewrite = False
        self._signature = _file_signature(self.path)


def _file_signature(path: Path) -> tuple[int, int] | None:
    try:
        st = (path / STATE_FILE).stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _record_line(prefix_hash: str, r: Record) -> bytes:
    return dumps({"h": prefix_hash, "r": r.rendered, "rt": r.raw_tokens, "ot": r.out_tokens,
                         "c": r.compressible, "s": r.settled})


def prefix_hashes(raw_messages: list[Any]) -> list[str]:
    """The session's keys: the hash of each message prefix (equal hashes mean equal messages up
    to and including it)."""
    out = []
    prev = b""
    for msg in raw_messages:
        h = xxhash.xxh3_128(prev)
        h.update(dumps(msg))
        prev = h.digest()
        out.append(h.hexdigest())
    return out


def known_prefix(hashes: list[str], records: dict[str, Record]) -> int:
    """Length of the longest message prefix the session has a record for."""
    for k in range(len(hashes), 0, -1):
        if hashes[k - 1] in records:
            return k
    return 0
