"""Test chains for the proxy. They run in the proxy's worker processes, so they live in this
light module (a worker imports it to unpickle the chain) as module-level functions."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ccr.markers import format_marker
from compress.model import Message
from compress.runner.pipeline import Chain
from compress.stagekit.stage import Stage, StageContext, each_mutable
from compress.tiers import Tier

CRASH = "ctxmill-test: kill the worker"
WAIT_FOR = "ctxmill-test: wait for "
"""A user message saying WAIT_FOR + a path holds a new session's first run until that file exists."""


def head_of_results(messages: list[Message], ctx: StageContext) -> list[Message]:
    """Visibly compresses whatever other stages exist: long old tool results keep their first
    200 characters and a CCR marker."""
    def shorten(i: int, msg: Message) -> Message:
        blocks = [b.with_result_text(ctx.lossy(b.result_text, lambda key, t=b.result_text: (
                      t[:200] + "\n" + format_marker(f"{len(t)} chars", key))))
                  if ctx.may_compress_result(b) and len(b.result_text) > 1000 else b for b in msg.blocks]
        return msg.with_blocks(blocks)

    return each_mutable(messages, ctx, shorten)


def held_until_released(messages: list[Message], ctx: StageContext) -> list[Message]:
    """When a run may change several messages (a new session's first run, not the incremental
    runs after it), waits until the file a user message names after WAIT_FOR exists (at most
    120 s): the test decides when the run ends, no clock does."""
    if sum(ctx.mutable) >= 3:
        named = [m.group(1) for msg in messages if msg.role == "user" and isinstance(msg.raw, dict)
                 for m in [re.search(re.escape(WAIT_FOR) + r"(\S+)", str(msg.raw.get("content")))] if m]
        deadline = time.monotonic() + 120
        while named and not Path(named[0]).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    return messages


def crash_on_request(messages: list[Message], ctx: StageContext) -> list[Message]:
    """Kills the worker process when a user message says CRASH."""
    if any(m.role == "user" and not isinstance(m.raw.get("content"), list) and CRASH in m.raw["content"]
           for m in messages if isinstance(m.raw, dict)):
        os._exit(3)
    return messages


CHAIN = Chain().push(Stage("head_of_results", head_of_results, Tier.ALWAYS))
HELD_CHAIN = Chain().push(Stage("held", held_until_released, Tier.ALWAYS)).push(
    Stage("head_of_results", head_of_results, Tier.ALWAYS))
CRASH_CHAIN = Chain().push(Stage("crash", crash_on_request, Tier.ALWAYS)).push(
    Stage("head_of_results", head_of_results, Tier.ALWAYS))


def stamp(label: str, seconds: float) -> tuple[str, float]:
    """A worker job for the scheduling test: sleeps, then says when it finished."""
    time.sleep(seconds)
    return label, time.monotonic()
