"""Shared test helpers: run the pipeline with an in-memory CCR store and a small protected tail."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ccr.markers import find_markers
from ccr.store import CCRStore
from compress.config import CompressConfig
from compress.runner.pipeline import run
from compress.runner.run_report import RunResult
from compress.state.session import Session
from ground.jsonbytes import dumps

READS_BY_AGE = {"unshown_tier": "always"}
"""trim_outputs options under which a read that no later message shows is cut by age at any tier
(shipped: whole below the high tier), so a long read of a text file is an output the pipeline cuts
once it leaves the protected tail: what the epoch and pipeline tests below cut."""
SMALL_TAIL = CompressConfig(protect_tail_tokens=0, protect_tail_turns=1, min_saving_chars=20,
                            stage_options={"trim_outputs": READS_BY_AGE})


def compress(body: Any, config: CompressConfig = SMALL_TAIL, session: Session | None = None,
             store: CCRStore | None = None, **kw: Any) -> RunResult:
    return run(body, session=session or Session.memory(), store=store or CCRStore.in_memory(), config=config, **kw)


def conversation_field(body: Any) -> str:
    """The field holding the body's conversation in its provider shape ("messages", "input")."""
    from compress.formats.requests import SHAPES, detect

    return SHAPES[detect(body)].MESSAGES_FIELD


def as_bytes(body: Any) -> bytes:
    return dumps(body)


def strings(obj: Any) -> list[str]:
    """Every string inside a parsed JSON value, depth first."""
    out: list[str] = []
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return out


def markers_in(body: Any) -> list:
    """Every ctxmill marker in the strings of a request body."""
    return [m for s in strings(body) for m in find_markers(s)]


LIVENESS_SECONDS = 120
"""How long a test waits for something that must happen: a liveness bound on a busy machine,
never a speed claim (speed is measured in bench/)."""


def eventually(predicate: Callable[[], bool], seconds: float = LIVENESS_SECONDS) -> None:
    """Wait until `predicate()` holds; fail only when it still does not after `seconds`."""
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
