"""Accepting a lossy rewrite whose markers are written inside the rewrite itself.

Stages that place several markers (or markers inside JSON) build their candidate once, with the
original's own CCR key; `accept` then applies the common saving rule through `ctx.lossy`, which
stores the original before the candidate is returned.
"""

from __future__ import annotations

from collections.abc import Callable

from ccr.keys import make_key
from compress.stagekit.stage import StageContext


def accept(ctx: StageContext, original: str, render: Callable[[str], str | None], hint: str | None = None,
           stored: str | None = None) -> str:
    """`render(key)` (None: nothing to cut) if it saves enough, with the original in CCR under
    `key`; otherwise the original. The rendering must mention the key only in markers.
    `stored`: the key of a fuller original already in CCR (a thinned read's whole read); the
    rendering then names it and nothing new is stored."""
    key = stored or make_key(original)
    candidate = render(key)
    if candidate is None:
        return original
    if stored:
        return candidate if ctx.worth_it(original, candidate) else original
    return ctx.lossy(original, lambda k: candidate.replace(key, k), hint)
