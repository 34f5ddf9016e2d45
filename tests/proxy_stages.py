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


def held_until(body: dict, release: Path) -> dict:
    """`body` with its first message asking the held chains to wait until `release` exists."""
    first = body["messages"][0]
    return {**body, "messages": [{**first, "content": f"{WAIT_FOR}{release}\n{first['content']}"},
                                 *body["messages"][1:]]}


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


HOLD_FROM = 10
"""`held_later` holds the runs of requests of at least this many messages."""


def held_later(messages: list[Message], ctx: StageContext) -> list[Message]:
    """A run of a request of HOLD_FROM messages or more (a later request of the session: with
    epochs off, an incremental run) whose user message names a path after WAIT_FOR writes
    `<path>.started`, then waits until the path exists (at most 120 s). It claims to append to
    the newest message (it never does) so that it runs when no message is mutable."""
    if len(messages) >= HOLD_FROM:
        named = [m.group(1) for msg in messages if msg.role == "user" and isinstance(msg.raw, dict)
                 for m in [re.search(re.escape(WAIT_FOR) + r"(\S+)", str(msg.raw.get("content")))] if m]
        if named:
            Path(named[0] + ".started").touch()
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
HELD_LATER_CHAIN = Chain().push(Stage("held", held_later, Tier.ALWAYS, appends_to_newest=True)).push(
    Stage("head_of_results", head_of_results, Tier.ALWAYS))
CRASH_CHAIN = Chain().push(Stage("crash", crash_on_request, Tier.ALWAYS)).push(
    Stage("head_of_results", head_of_results, Tier.ALWAYS))


def stamp(label: str, seconds: float) -> tuple[str, float]:
    """A worker job for the scheduling test: sleeps, then says when it finished."""
    time.sleep(seconds)
    return label, time.monotonic()


def epoch_stamp(label: str) -> str:
    """A worker job that says it began an epoch (as a compression run does), then returns."""
    from ctxmill.proxy import worker

    worker._epoch_notice()
    return label
