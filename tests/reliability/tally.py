"""Counts of the adversarial suite, for RELIABILITY.md: what each test tried, lost and leaked.

A test calls `record` with what it measured, then asserts lost == leaked == 0 itself. With
CTXMILL_TALLY=<file> set, each call appends one JSON line there (`python bench/adversarial.py`
runs the adversarial tests that way and prints the table); otherwise nothing is written.
"""

from __future__ import annotations

import json
import os


def record(face: str, what: str, tried: int, lost: int = 0, leaked: int = 0) -> None:
    """`tried` inputs or operations against `face`; `lost`: requests or writes that did not
    arrive whole, or a face that stopped serving; `leaked`: secrets found where they must not be."""
    path = os.environ.get("CTXMILL_TALLY")
    if path:
        line = json.dumps({"face": face, "what": what, "tried": int(tried), "lost": int(lost), "leaked": int(leaked)})
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")
