"""Accepting a lossy rewrite whose markers are written inside the rewrite itself.

Stages that place several markers (or markers inside JSON) build their candidate once, with the
original's own CCR key; `accept` then applies the common saving rule through `ctx.lossy`, which
stores the original before the candidate is returned.
"""

from __future__ import annotations

from typing import Callable

from ccr.keys import make_key
from compress.stage import StageContext


def accept(ctx: StageContext, original: str, render: Callable[[str], str | None], hint: str | None = None) -> str:
    """`render(key)` (None: nothing to cut) if it saves enough, with the original in CCR under
    `key`; otherwise the original. The rendering must mention the key only in markers."""
    key = make_key(original)
    candidate = render(key)
    if candidate is None:
        return original
    return ctx.lossy(original, lambda k: candidate.replace(key, k), hint)
