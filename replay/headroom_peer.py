"""headroom-ai's `compress()` as a replay peer, run in its own venv (see ../shared/peers/).

One long-lived subprocess of that venv's python runs `headroom_worker.py`; each request's
message list goes in as one line and comes back compressed. `available(python)` tells whether
that python can import headroom.

Must hold: each body's own conversation field is what headroom gets and what comes back
(`messages`, or a Responses body's `input`), so one peer serves sessions of every provider.
headroom's library `compress()` knows Anthropic and Chat messages only: Responses items come
back as they went in (the worker passes a body it cannot compress through unchanged).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from compress.formats.requests import SHAPES, detect

WORKER = Path(__file__).with_name("headroom_worker.py")


def available(python: str | Path) -> bool:
    try:
        done = subprocess.run([str(python), "-c", "import headroom"], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


class Headroom:
    """Body -> body with headroom's compressed messages (its own venv's `python`)."""

    def __init__(self, python: str | Path) -> None:
        self.proc = subprocess.Popen([str(python), str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, encoding="utf-8")

    def __call__(self, body: dict) -> dict:
        assert self.proc.stdin and self.proc.stdout
        field = SHAPES[detect(body)].MESSAGES_FIELD
        self.proc.stdin.write(json.dumps(body[field], ensure_ascii=False) + "\n")
        self.proc.stdin.flush()
        return {**body, field: json.loads(self.proc.stdout.readline())}

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)
