"""Test chains for the proxy. They run in the proxy's worker processes, so they live in this
light module (a worker imports it to unpickle the chain) as module-level functions."""

from __future__ import annotations

import os
import time

from ccr.markers import format_marker
from compress.model import Message
from compress.pipeline import Chain
from compress.stage import Stage, StageContext, each_mutable
from compress.tiers import Tier

SLOW_SECONDS = 1.5
CRASH = "ctxmill-test: kill the worker"


def head_of_results(messages: list[Message], ctx: StageContext) -> list[Message]:
    """Visibly compresses whatever other stages exist: long old tool results keep their first
    200 characters and a CCR marker."""
    def shorten(i: int, msg: Message) -> Message:
        blocks = [b.with_result_text(ctx.lossy(b.result_text, lambda key, t=b.result_text: (
                      t[:200] + "\n" + format_marker(f"{len(t)} chars", key))))
                  if ctx.may_compress_result(b) and len(b.result_text) > 1000 else b for b in msg.blocks]
        return msg.with_blocks(blocks)

    return each_mutable(messages, ctx, shorten)


def slow_when_many_mutable(messages: list[Message], ctx: StageContext) -> list[Message]:
    """Sleeps SLOW_SECONDS when a run may change several messages (a new session's first run),
    not on the incremental runs after it."""
    if sum(ctx.mutable) >= 3:
        time.sleep(SLOW_SECONDS)
    return messages


def crash_on_request(messages: list[Message], ctx: StageContext) -> list[Message]:
    """Kills the worker process when a user message says CRASH."""
    if any(m.role == "user" and not isinstance(m.raw.get("content"), list) and CRASH in m.raw["content"]
           for m in messages if isinstance(m.raw, dict)):
        os._exit(3)
    return messages


CHAIN = Chain().push(Stage("head_of_results", head_of_results, Tier.ALWAYS))
SLOW_CHAIN = Chain().push(Stage("slow", slow_when_many_mutable, Tier.ALWAYS)).push(
    Stage("head_of_results", head_of_results, Tier.ALWAYS))
CRASH_CHAIN = Chain().push(Stage("crash", crash_on_request, Tier.ALWAYS)).push(
    Stage("head_of_results", head_of_results, Tier.ALWAYS))


def stamp(label: str, seconds: float) -> tuple[str, float]:
    """A worker job for the scheduling test: sleeps, then says when it finished."""
    time.sleep(seconds)
    return label, time.monotonic()
