"""Session state that keeps compressed output stable between epochs.

For every message the session remembers how it was rendered, keyed by the hash of the whole
message prefix up to and including it (the same thing a provider's prompt cache keys on).
Between epochs a known prefix is rendered exactly as before, so the compressed request k is a
byte prefix of request k+1 apart from new messages.

At rest (`<dir>/state.jsonl`, or the same bytes in Redis: `compress.state.session_store`): line 1 is
the epoch header; each further line is a message record
or a header update. A record holds its rendering sealed against the raw message
(`compress.state.sealed`): no secret the client sent is at rest, and the client's next request,
which holds the raw message again, opens it byte for byte. A record whose rendering cannot be
sealed is not written: a later process knows the prefix only up to it. An epoch rewrites the
file (temp file + rename); a run between epochs appends. A torn last line (crash while
appending) is ignored on load. Every process that loads, runs on or saves a session's state
holds its place's lock (`place.lock()`, for a directory `state_lock(dir)`; `Session.open(where)`
holds it from load to save), so they take turns. A process that keeps a session in memory
between runs reloads it when `changed_on_disk()`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from compress.state.prefix_hash import PrefixHashMemo, prefix_hashes
from compress.state.prune import SESSION_MAX_AGE_DAYS, SESSION_MAX_COUNT, prune_sessions
from compress.state.sealed import seal, unseal
from compress.state.session_store import STATE_FILE, RedisState, StateFiles
from ground.jsonbytes import dumps

if TYPE_CHECKING:
    from filelock import FileLock

log = logging.getLogger("ctxmill.compress")

__all__ = ["SESSION_MAX_AGE_DAYS", "SESSION_MAX_COUNT", "STATE_FILE", "VERSION", "Header", "Record", "Session",
           "known_prefix", "prefix_hashes", "prune_sessions", "state_lock"]
VERSION = 2
Place = StateFiles | RedisState


def state_lock(path: Path) -> FileLock:
    """The file lock of the session directory `path`: held around every load, run and save."""
    return StateFiles(path).lock()


def _place(where: Path | Place) -> Place:
    return where if isinstance(where, (StateFiles, RedisState)) else StateFiles(Path(where))


@dataclass(slots=True)
class Record:
    """How one message (identified by its prefix hash) is rendered in the current epoch.

    settled: it was decided outside the protected tail, so a re-run would not find more in it
    compressible: tokens of the blocks a stage could shorten
    """

    rendered: Any
    """The message as sent; None until `open` rebuilds it (a record loaded from disk)."""
    raw_tokens: int
    out_tokens: int
    compressible: int
    settled: bool
    keys: tuple[str, ...] = ()
    """The CCR keys the rendering's markers name (kept alive while the session sends them)."""
    source: Any = None
    """The raw message the rendering was made from (memory only, until the record is sealed)."""
    sealed: Any = None
    """The at-rest form (`compress.state.sealed`); None until sealed or when it cannot be."""

    def open(self, raw: Any) -> Any:
        """The rendering, rebuilt from `raw` (the message the prefix hash names) if loaded."""
        if self.rendered is None:
            self.rendered = unseal(self.sealed, raw)
        return self.rendered

    def at_rest(self, redact_extra: tuple = (), redact_allow: tuple = ()) -> Any:
        """The sealed form (computed once; None: this record cannot be written)."""
        if self.sealed is None and self.source is not None:
            self.sealed = seal(self.rendered, self.source, redact_extra, redact_allow)
            self.source = None
        return self.sealed


@dataclass(slots=True)
class Header:
    version: int = VERSION
    provider: str = ""
    epoch: int = 0
    tier: int = -1
    """The token-pressure tier the last epoch left (`compress.runner.epochs.left_pressure`; -1: none)."""
    anchor_turn: int = 0
    next_trial_at: int = 0
    touched_at: float = 0.0
    """When the CCR entries the session's renderings name were last refreshed (store clock)."""
    last_request_at: float = 0.0
    """When the session's latest request was sent, by its caller's clock (0: unknown)."""
    calibration: float | None = None
    """The caller's measure of how the provider counts this session's requests (the proxy: its
    reported prompt tokens over ctxmill's estimate); None until a usage report. It decides the
    tier, so it is state like the rest: every process that continues the session reads it."""
    tokens_per_byte: float | None = None
    """ctxmill's raw token estimate per request byte, as of the calibrated request."""
    prepared: str = ""
    """Why the epoch started after the last run's answer (`settle`), until the next run, the
    first one sent with it, reports it ('' otherwise)."""


@dataclass
class Session:
    place: Place | None = None
    """Where the state is kept (None: memory only)."""
    header: Header = field(default_factory=Header)
    records: dict[str, Record] = field(default_factory=dict)
    request_ends: list[int] = field(default_factory=list)
    """Message counts of the requests rendered since their messages last changed: their
    renderings are what the provider has cached."""
    parsed: dict[str, Any] = field(default_factory=dict, repr=False)
    """Canonical messages by prefix hash, kept in memory only, so a long-lived process parses
    only new messages."""
    hashing: PrefixHashMemo = field(default_factory=PrefixHashMemo, repr=False)
    """The last request's prefix hashes, to hash the next one quicker (memory only)."""
    scans: dict[Any, Any] = field(default_factory=dict, repr=False)
    """Checkpoints of the stages' scans over the parsed messages (`compress.prefix_scans`),
    in memory only, so a long-lived process resumes them rather than replaying the history."""
    redaction: tuple[tuple, tuple] = ((), ())
    """(redact_extra, redact_allow) for sealing records: set by the pipeline from its config."""
    deferred: Callable[[], None] | None = field(default=None, repr=False)
    """What the last run left for after its answer (`settle`; memory only, never left unsettled
    when the state is saved)."""
    _pending: list[bytes | tuple[str, Record]] = field(default_factory=list, repr=False)
    _rewrite: bool = field(default=False, repr=False)
    _signature: object = field(default=None, repr=False)
    """The place's signature when this session last loaded or saved it."""
    _whole: bool = field(default=False, repr=False)
    """This session holds what its place held at `_signature`, no more (`reloaded` may add what
    others appended since): false once a record could not be written, until an epoch rewrites."""

    @classmethod
    def memory(cls) -> Session:
        return cls()

    @property
    def path(self) -> Path | None:
        """The session directory, when the state is kept in files."""
        return self.place.directory if isinstance(self.place, StateFiles) else None

    @classmethod
    def load(cls, where: Path | Place, held: Session | None = None) -> Session:
        """The state kept at `where` (a session directory or a place); an empty session when
        there is none or it is unreadable. Errors of the place itself (Redis down) propagate.
        `held`: this place's session as this process last loaded or saved it: it is returned
        with only what others appended since read (`_caught_up`), when that can be known."""
        place = _place(where)
        if held is not None and held.place is place and (caught_up := held._caught_up()) is not None:
            return caught_up
        session = cls(place=place)
        data, session._signature = place.read()
        if data is None:
            return session
        lines = data.split(b"\n")
        try:
            header = orjson.loads(lines[0])
        except orjson.JSONDecodeError:
            return session  # unreadable state: start a new epoch, never trust it
        if header.get("version") != VERSION:
            return session
        session.header = Header(**{k: header[k] for k in asdict(Header()) if k in header})
        session._extend(lines[1:])
        session._whole = True
        return session

    def _caught_up(self) -> Session | None:
        """This session with the lines others appended to its place since it last loaded or saved
        it (`RedisState.read_since`: only those are read), so the same state as a whole load,
        its parsed messages and opened renderings kept; None when it cannot be known (the place
        cannot tell, was rewritten since, or this session holds more than it wrote)."""
        read_since = getattr(self.place, "read_since", None)
        if read_since is None or not self._whole or self._pending or self._rewrite or self.deferred is not None:
            return None
        if (appended := read_since(self._signature)) is None:
            return None
        data, self._signature = appended
        self._extend(data.split(b"\n"))
        return self

    def _extend(self, lines: list[bytes]) -> None:
        """Apply the state's lines after its header, as written (a torn or unreadable one is skipped)."""
        for line in lines:
            if not line:
                continue
            try:
                item = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # torn last line
            if "h" in item:
                self.records[item["h"]] = Record(None, item["rt"], item["ot"], item["c"], item["s"],
                                                 keys=tuple(item.get("k", ())), sealed=item["r"])
            elif "next_trial_at" in item:
                self.header.next_trial_at = item["next_trial_at"]
            elif "touched_at" in item:
                self.header.touched_at = item["touched_at"]
            elif "last_request_at" in item:
                self.header.last_request_at = item["last_request_at"]
            elif "calibration" in item:
                self.header.calibration = item["calibration"]
                self.header.tokens_per_byte = item.get("tokens_per_byte")
            elif "prepared" in item:
                self.header.prepared = item["prepared"]
            elif "end" in item:
                self.request_ends.append(item["end"])
            elif "ends_upto" in item:
                self.request_ends = [e for e in self.request_ends if e <= item["ends_upto"]]

    @classmethod
    @contextlib.contextmanager
    def open(cls, where: Path | Place) -> Iterator[Session]:
        """Load under the session's lock and save on a clean exit."""
        place = _place(where)
        with place.lock():
            session = cls.load(place)
            yield session
            session.save()

    # -- changes -----------------------------------------------------------------

    def settle(self) -> None:
        """Do what the last run left for after its answer (judging an epoch trial:
        `compress.runner.trial`). A face calls it once it has delivered the run's body; `save` and the
        next run call it when the face did not, so what is saved, and so the next request's
        bytes, never depend on whether a process kept the session in memory. Never raises: a
        failure is logged and the session stays as the run left it."""
        pending, self.deferred = self.deferred, None
        if pending is None:
            return
        try:
            pending()
        except Exception as exc:  # noqa: BLE001 - fail open: the session goes on in its epoch
            log.warning("epoch trial after the answer failed: %s: %s", type(exc).__name__, exc)

    def start_epoch(self, provider: str, tier: int, anchor_turn: int, records: dict[str, Record],
                    unchanged: int = 0) -> None:
        """`unchanged`: the epoch renders the first this many messages as before, so the requests
        that ended there stay cached."""
        self.header = Header(provider=provider, epoch=self.header.epoch + 1, tier=tier,
                             anchor_turn=anchor_turn, next_trial_at=0, touched_at=self.header.touched_at,
                             last_request_at=self.header.last_request_at, calibration=self.header.calibration,
                             tokens_per_byte=self.header.tokens_per_byte)
        self.records = dict(records)
        self.request_ends = [e for e in self.request_ends if e <= unchanged]
        self.parsed = {h: m for h, m in self.parsed.items() if h in self.records}
        self._pending.clear()
        self._rewrite = True

    def add(self, prefix_hash: str, record: Record) -> None:
        self.records[prefix_hash] = record
        self._pending.append((prefix_hash, record))

    def add_request_end(self, messages: int) -> None:
        if not self.request_ends or self.request_ends[-1] != messages:
            self.request_ends.append(messages)
            self._pending.append(dumps({"end": messages}))

    def forget_request_ends_after(self, messages: int) -> None:
        """The provider no longer gets the first messages past `messages` as it got them (the
        client changed one, or a person's new prompt made it drop earlier thinking), so no
        request that ended after them is a cached prefix of later ones."""
        if any(e > messages for e in self.request_ends):
            self.request_ends = [e for e in self.request_ends if e <= messages]
            self._pending.append(dumps({"ends_upto": messages}))

    def set_next_trial(self, tokens: int) -> None:
        self.header.next_trial_at = tokens
        self._pending.append(dumps({"next_trial_at": tokens}))

    def take_prepared(self) -> str:
        """`Header.prepared`, cleared: the run that reports the epoch takes it."""
        reason, self.header.prepared = self.header.prepared, ""
        if reason:
            self._pending.append(dumps({"prepared": ""}))
        return reason

    def set_touched(self, when: float) -> None:
        self.header.touched_at = when
        self._pending.append(dumps({"touched_at": when}))

    def set_last_request(self, when: float) -> None:
        self.header.last_request_at = when
        self._pending.append(dumps({"last_request_at": when}))

    def set_calibration(self, calibration: float, tokens_per_byte: float) -> None:
        self.header.calibration, self.header.tokens_per_byte = calibration, tokens_per_byte
        self._pending.append(dumps({"calibration": calibration, "tokens_per_byte": tokens_per_byte}))

    def named_keys(self, hashes: list[str]) -> set[str]:
        """The CCR keys the renderings of these messages name."""
        return {key for h in hashes if h in self.records for key in self.records[h].keys}

    # -- persistence ---------------------------------------------------------------

    def changed_on_disk(self) -> bool:
        """Whether another process wrote the state since this session loaded or saved it."""
        return self.place is not None and self.place.signature() != self._signature

    def save(self) -> None:
        self.settle()
        if self.place is None:
            self._pending.clear()
            self._rewrite = False
            return
        if self._rewrite or not self.place.exists():
            self._whole = True  # `_line` clears it for a record it cannot write
            lines = [dumps(asdict(self.header))]
            lines += [self._line(item) for item in self.records.items()]
            lines += [dumps({"end": n}) for n in self.request_ends]
            self._signature = self.place.rewrite(b"\n".join(line for line in lines if line) + b"\n")
        elif lines := [line for line in map(self._line, self._pending) if line]:
            self._signature = self.place.append(b"\n".join(lines) + b"\n")
        else:
            self._signature = self.place.signature()
        self._pending.clear()
        self._rewrite = False

    def _line(self, item: bytes | tuple[str, Record]) -> bytes:
        """A pending line as written: a record sealed now (b"" when it cannot be)."""
        if isinstance(item, bytes):
            return item
        prefix_hash, r = item
        sealed = r.at_rest(*self.redaction)
        if sealed is None:
            self._whole = False
            return b""
        line = {"h": prefix_hash, "r": sealed, "rt": r.raw_tokens, "ot": r.out_tokens, "c": r.compressible,
                "s": r.settled}
        return dumps({**line, "k": list(r.keys)} if r.keys else line)


def known_prefix(hashes: list[str], records: dict[str, Record], raw_messages: list[Any]) -> int:
    """Length of the longest message prefix the session has a record of each message for,
    each rendering opened (a record loaded from disk is rebuilt from its raw message)."""
    for i, h in enumerate(hashes):
        record = records.get(h)
        if record is None:
            return i
        if record.rendered is not None:
            continue  # open already
        try:
            record.open(raw_messages[i])
        except ValueError as exc:
            log.warning("session state unusable from message %d on: %s", i, exc)
            return i
    return len(hashes)
