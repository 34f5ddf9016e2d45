"""Cost of redacting CCR originals on the hot path (compress.stagekit.stage.PendingOriginals.put).

Run: `python bench/secrets_cost.py [REQUEST.json ...]` (default: fixtures/example-request.json
and the pathological single-line and log requests). For each request: pipeline time with
every stage able to work, time spent in redaction, and redaction throughput on text without
and with trigger words.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

import compress.stagekit.stage as stage  # noqa: E402
from bench.pathological import every_stage, log_lines, single_line  # noqa: E402
from ccr.store import CCRStore  # noqa: E402
from compress.runner.pipeline import run  # noqa: E402
from compress.state.session import Session  # noqa: E402
from ground.redact import redact  # noqa: E402

spent = [0.0]


def timed_redact(*args, **kwargs):
    t0 = time.perf_counter()
    try:
        return redact(*args, **kwargs)
    finally:
        spent[0] += time.perf_counter() - t0


def pipeline_share(name: str, body: dict, repeat: int = 5) -> None:
    stage.redact = timed_redact
    best_total, best_redact = float("inf"), 0.0
    for _ in range(repeat):
        spent[0] = 0.0
        t0 = time.perf_counter()
        result = run(body, session=Session.memory(), store=CCRStore.in_memory(), config=every_stage())
        total = time.perf_counter() - t0
        if total < best_total:
            best_total, best_redact = total, spent[0]
    stage.redact = redact
    print(f"{name}: pipeline {best_total * 1000:.1f} ms, redaction {best_redact * 1000:.2f} ms "
          f"({100 * best_redact / best_total:.1f}%), {result.report.ccr_written} originals")


def throughput(name: str, text: str) -> None:
    redact(text)
    t0 = time.perf_counter()
    for _ in range(5):
        redact(text)
    seconds = (time.perf_counter() - t0) / 5
    print(f"redact {name}: {len(text) / seconds / 2**20:.0f} MB/s")


def main() -> None:
    paths = sys.argv[1:] or [str(ROOT / "fixtures" / "example-request.json")]
    for path in paths:
        pipeline_share(Path(path).name, orjson.loads(Path(path).read_bytes()))
    pipeline_share("200K-char single line", single_line(200_000))
    pipeline_share("100K-line log", log_lines(100_000))
    throughput("plain code (no trigger)", "def f(x):\n    return x + 1  # add one to the value\n" * 20_000)
    throughput("code with key/token/URL", "v = d[key] + token  # see https://example.com/x\n" * 20_000)
    throughput("an env dump full of secrets", ("GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4 + "\n"
                                               "password=hunter2hunter2\n") * 20_000)


if __name__ == "__main__":
    main()
