"""headroom-ai's `compress()` as a replay peer, run in its own venv (see ../shared/peers/).

One long-lived subprocess of that venv's python runs `headroom_worker.py`; each request's
message list goes in as one line and comes back compressed. `available(python)` tells whether
that python can import headroom.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

WORKER = Path(__file__).with_name("headroom_worker.py")


def available(python: str | Path) -> bool:
    try:
        done = subprocess.run([str(python), "-c", "import headroom"], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


class Headroom:
    """Body -> body with headroom's compressed messages (its own venv's `python`)."""

    def __init__(self, python: str | Path, field: str = "messages") -> None:
        self.field = field
        self.proc = subprocess.Popen([str(python), str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, encoding="utf-8")

    def __call__(self, body: dict) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(body[self.field], ensure_ascii=False) + "\n")
        self.proc.stdin.flush()
        return {**body, self.field: json.loads(self.proc.stdout.readline())}

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)
