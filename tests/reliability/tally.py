"""Counts of the adversarial suite, for docs/reliability.md: what each test tried, lost and leaked.

A test calls `record` with what it measured, then asserts lost == leaked == 0 itself. With
CTXMILL_TALLY=<file> set, each call appends one JSON line there (`python bench/adversarial.py`
runs the adversarial tests that way and prints the table); otherwise nothing is written.
"""

from __future__ import annotations

import json
import os


def record(face: str, what: str, tried: int, lost: int | None = None, leaked: int | None = None) -> None:
    """`tried` inputs or operations against `face`; `lost`: requests or writes that did not
    arrive whole, or a face that stopped serving; `leaked`: secrets found where they must not be.
    None (the default): the test does not measure that one (the table shows "–")."""
    path = os.environ.get("CTXMILL_TALLY")
    if path:
        counts = {"tried": int(tried), "lost": None if lost is None else int(lost),
                  "leaked": None if leaked is None else int(leaked)}
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"face": face, "what": what, **counts}) + "\n")
