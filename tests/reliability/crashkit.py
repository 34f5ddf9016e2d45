"""Crash and concurrency harness: writers in forked children, killed with SIGKILL at random
points or run side by side, reporting through a pipe what they are about to do ("intent")
and what has been committed; checkers verify the files against those reports.

Used by tests/reliability/test_crash_safety.py (small budgets) and bench/crash.py (large).
Fork, not spawn: a child starts in about a millisecond, so hundreds of kills take seconds.
"""

from __future__ import annotations

import os
import random
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import xxhash

from ccr.store import CCRStore
from compress.runner.pipeline import run
from compress.state.session import Session
from ground.jsonbytes import dumps
from memory import api
from memory.config import MemoryConfig

Writer = Callable[[Path, int, Callable[[str], None]], None]
"""writer(root, seed, report): loops until killed, calling report(line) as it goes."""


@dataclass
class Outcome:
    iterations: int = 0
    committed: int = 0
    failures: list[str] = field(default_factory=list)


def memory_config(root: Path) -> MemoryConfig:
    return MemoryConfig(project_home=root / "project", global_home=root / "global", decay=False)


def entry_text(tag: str, n: int) -> str:
    return f"entry {tag} number {n}: the build uses cache key {xxhash.xxh32_hexdigest(f'{tag}{n}'.encode())}"


def _child(writer: Writer, root: Path, seed: int, pipe: int) -> None:
    def report(line: str) -> None:
        os.write(pipe, (line + "\n").encode())

    try:
        writer(root, seed, report)
        report("END")
    except BaseException:  # noqa: BLE001 - reported to the parent, which fails the test
        report("EXC " + traceback.format_exc().replace("\n", " | "))
    os._exit(0)


def run_child(writer: Writer, root: Path, seed: int, kill_after: tuple[int, float] | None) -> list[str]:
    """Fork a writer and return its report lines. `kill_after` = (reports, seconds): SIGKILL it
    `seconds` after it has written `reports` report lines (so the kill lands while it works,
    however slow the machine is); None: let it finish."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(writer, root, seed, write)
    os.close(write)
    chunks: list[bytes] = []
    if kill_after is not None:
        reports, seconds = kill_after
        while sum(c.count(b"\n") for c in chunks) < reports and (chunk := os.read(read, 1 << 16)):
            chunks.append(chunk)
        time.sleep(seconds)
        os.kill(pid, signal.SIGKILL)
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    data = b"".join(chunks).decode()
    return data.split("\n")[:-1]  # a torn last line was never fully reported


# -- memory ------------------------------------------------------------------------------------

def memory_writer(root: Path, seed: int, report: Callable[[str], None], ops: int | None = None) -> None:
    """Stores entries and forgets some of its own; `ops` bounds the loop (None: until killed)."""
    cfg, rng, mine, n = memory_config(root), random.Random(seed), [], 0
    while ops is None or n < ops:
        n += 1
        memory_op(cfg, rng, mine, entry_text(f"s{seed}", n), report)
        if rng.random() < 0.2:
            api.search(cfg, "cache key build", limit=3)


def memory_op(cfg: MemoryConfig, rng: random.Random, mine: list[str], text: str,
              report: Callable[[str], None]) -> None:
    """Forget one of `mine` (30%) or store `text`, reporting the intent and the commit."""
    if mine and rng.random() < 0.3:
        victim = mine.pop(rng.randrange(len(mine)))
        report(f"intent forget {victim}")
        api.forget(cfg, victim)
        report(f"forgot {victim}")
    else:
        report(f"intent store {text}")
        mine.append(api.store(cfg, "fact", text).id)
        report(f"stored {mine[-1]} {text}")


def check_memory(root: Path, lines: list[str], expected: dict[str, str], known_texts: set[str]) -> list[str]:
    """Apply the reports to `expected` (id -> text of committed, not forgotten entries) and
    compare with the files: every committed entry is there once, no unknown or partial text."""
    pending: tuple[str, str] | None = None
    for line in lines:
        kind, _, rest = line.partition(" ")
        if kind == "intent":
            pending = tuple(rest.split(" ", 1))  # ("store", text) | ("forget", id)
            if pending[0] == "store":
                known_texts.add(pending[1])
        elif kind == "stored":
            entry_id, text = rest.split(" ", 1)
            expected[entry_id], pending = text, None
        elif kind == "forgot":
            expected.pop(rest, None)
            pending = None
        elif kind == "EXC":
            return [f"writer raised: {rest}"]
    entries = api.list_entries(memory_config(root))
    found = {}
    problems = []
    for e in entries:
        if e.id in found:
            problems.append(f"duplicate entry {e.id}")
        found[e.id] = e.text
        if e.text not in known_texts:
            problems.append(f"unknown or partial entry {e.id}: {e.text[:80]!r}")
    for entry_id, text in list(expected.items()):
        if entry_id not in found:
            if pending == ("forget", entry_id):
                expected.pop(entry_id)  # the forget in flight was committed before the kill
                continue
            problems.append(f"committed entry lost: {entry_id}")
        elif found[entry_id] != text:
            problems.append(f"entry {entry_id} changed")
    for entry_id, text in found.items():  # a store in flight may have committed: adopt it
        if entry_id not in expected and pending == ("store", text):
            expected[entry_id] = text
        elif entry_id not in expected:
            problems.append(f"forgotten or unknown entry present: {entry_id}")
    return problems


# -- CCR ---------------------------------------------------------------------------------------

def ccr_text(seed: int, n: int, j: int) -> str:
    return f"original {seed}/{n}/{j} " + "log line\n" * (1 + (n * 7 + j) % 200)


def ccr_writer(root: Path, seed: int, report: Callable[[str], None], batches: int | None = None) -> None:
    rng, n = random.Random(seed), 0
    with CCRStore(root / "ccr") as store:
        while batches is None or n < batches:
            n += 1
            size = rng.randint(1, 8)
            report(f"intent {n} {size}")
            with store.batch():
                keys = [store.put(ccr_text(seed, n, j), f"re-run batch {n}") for j in range(size)]
            report(f"committed {n} {size} {' '.join(keys)}")


def check_ccr(root: Path, seed: int, lines: list[str], expected: dict[str, str], full: bool = False) -> list[str]:
    """Every key committed by this writer (`full`: by any writer so far; else a sample of the
    earlier ones) resolves to its text; a batch in flight is all there or not at all."""
    earlier = list(expected.items())
    new: dict[str, str] = {}
    pending = None
    for line in lines:
        kind, _, rest = line.partition(" ")
        if kind == "intent":
            n, size = map(int, rest.split())
            pending = [ccr_text(seed, n, j) for j in range(size)]
        elif kind == "committed":
            n, size, *keys = rest.split()
            new.update(zip(keys, (ccr_text(seed, int(n), j) for j in range(int(size)))))
            pending = None
        elif kind == "EXC":
            return [f"writer raised: {rest}"]
    expected.update(new)
    check = expected.items() if full else [*new.items(), *random.sample(earlier, min(50, len(earlier)))]
    problems = []
    with CCRStore(root / "ccr") as store:
        if full and store._db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            problems.append("database integrity check failed")
        for key, text in check:
            got = store.get(key)
            if got.text != text:
                problems.append(f"committed key {key} reads back as {got.status}")
        if pending:
            from ccr.keys import make_key

            present = [store.get(make_key(t)).ok for t in pending]
            if any(present) and not all(present):
                problems.append(f"batch in flight partly stored: {present}")
    return problems


# -- session state -----------------------------------------------------------------------------

def session_body(k: int) -> dict:
    """Request k of a growing Anthropic conversation (request k is a prefix of request k+1)."""
    from tests.chain_checks import anthropic_body

    calls = [("Bash", {"command": f"run {i % 5}"}, f"output {i % 5}\n" * (40 + i % 7)) for i in range(k + 1)]
    return anthropic_body(calls)


def session_digest(session: Session) -> str:
    h = session.header
    return xxhash.xxh3_64_hexdigest(dumps([h.provider, h.epoch, h.tier, h.anchor_turn, h.next_trial_at,
                                           sorted((k, r.at_rest(), r.raw_tokens, r.out_tokens, r.compressible,
                                                   r.settled) for k, r in session.records.items())]))


def session_writer(root: Path, seed: int, report: Callable[[str], None], runs: int | None = None) -> None:
    rng, n = random.Random(seed), 0
    with CCRStore(root / "ccr") as store:
        while runs is None or n < runs:
            n += 1
            k = rng.randint(0, 30)
            with Session.open(root / "session") as session:
                result = run(session_body(k), session=session, store=store)
                if result.report.error:
                    raise RuntimeError(result.report.error)
                report(f"intent {session_digest(session)}")
            report(f"committed {session_digest(Session.load(root / 'session'))}")


def check_session(root: Path, lines: list[str], state: dict[str, str]) -> list[str]:
    """The state on disk loads and is the last committed state or the one being saved."""
    pending = None
    for line in lines:
        kind, _, rest = line.partition(" ")
        if kind == "intent":
            pending = rest
        elif kind == "committed":
            state["committed"], pending = rest, None
        elif kind == "EXC":
            return [f"writer raised: {rest}"]
    loaded = session_digest(Session.load(root / "session"))
    allowed = {state.get("committed", session_digest(Session())), pending}
    if loaded not in allowed:
        return [f"session state {loaded} is neither the committed one nor the one in flight"]
    state["committed"] = loaded
    return []


# -- the kill loop -----------------------------------------------------------------------------

def kill_loop(kind: str, root: Path, iterations: int, max_delay: float, seed: int = 0) -> Outcome:
    """Run `iterations` writers of `kind` (memory | ccr | session) on the same folder, killing
    each at a random moment after its first commit (0-`max_delay` s after 2-6 reports),
    and check the files after every kill."""
    rng = random.Random(seed)
    outcome = Outcome()
    memory_expected: dict[str, str] = {}
    known: set[str] = set()
    ccr_expected: dict[str, str] = {}
    state: dict[str, str] = {}
    for i in range(iterations):
        child_seed = seed * 100_000 + i
        writer = {"memory": memory_writer, "ccr": ccr_writer, "session": session_writer}[kind]
        lines = run_child(writer, root, child_seed, (rng.randint(2, 6), rng.uniform(0, max_delay)))
        if kind == "memory":
            problems = check_memory(root, lines, memory_expected, known)
        elif kind == "ccr":
            problems = check_ccr(root, child_seed, lines, ccr_expected)
        else:
            problems = check_session(root, lines, state)
        outcome.iterations += 1
        outcome.committed += sum(line.startswith(("stored", "forgot", "committed")) for line in lines)
        outcome.failures += [f"iteration {i}: {p}" for p in problems]
    if kind == "ccr":
        outcome.failures += [f"final check: {p}" for p in check_ccr(root, 0, [], ccr_expected, full=True)]
    return outcome


# -- concurrency -------------------------------------------------------------------------------

def mixed_worker(root: Path, seed: int, report: Callable[[str], None], rounds: int) -> None:
    """`rounds` times: a memory store or forget, a search and a CCR batch."""
    rng = random.Random(seed)
    cfg, mine = memory_config(root), []
    with CCRStore(root / "ccr") as store:
        for n in range(1, rounds + 1):
            memory_op(cfg, rng, mine, entry_text(f"w{seed}", n), lambda line: report("m:" + line))
            api.search(cfg, f"number {n} cache key", limit=3)
            size = rng.randint(1, 4)
            report(f"c:intent {n} {size}")
            with store.batch():
                keys = [store.put(ccr_text(seed, n, j)) for j in range(size)]
            report(f"c:committed {n} {size} {' '.join(keys)}")


def run_concurrently(root: Path, workers: int, rounds: int, seed: int = 0) -> Outcome:
    """`workers` processes run mixed_worker at once; then nothing may be lost or duplicated."""
    children = []
    for w in range(workers):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            _child(lambda r, s, rep: mixed_worker(r, s, rep, rounds), root, seed * 1000 + w, write)
        os.close(write)
        children.append((pid, read, seed * 1000 + w))
    outcome = Outcome(iterations=workers)
    memory_lines: list[str] = []
    ccr_expected: dict[str, str] = {}
    for pid, read, child_seed in children:
        chunks = []
        while chunk := os.read(read, 1 << 16):
            chunks.append(chunk)
        os.close(read)
        os.waitpid(pid, 0)
        lines = b"".join(chunks).decode().split("\n")[:-1]
        if lines[-1:] != ["END"]:
            outcome.failures.append(f"worker {child_seed} did not finish: {lines[-1:]}")
        memory_lines += [line[2:] for line in lines if line.startswith("m:")] + [x for x in lines if x.startswith("EXC")]
        ccr_lines = [line[2:] for line in lines if line.startswith("c:")]
        outcome.committed += sum(line.startswith(("m:stored", "m:forgot", "c:committed")) for line in lines)
        outcome.failures += check_ccr(root, child_seed, ccr_lines, ccr_expected, full=True)
    outcome.failures += check_memory(root, memory_lines, {}, set())
    return outcome
