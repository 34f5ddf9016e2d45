"""Fingerprint the pipeline's output so a speed-up can prove it changed no byte.

    python bench/output_hashes.py > before.txt   # on the old code
    python bench/output_hashes.py > after.txt    # on the new code; then: diff before.txt after.txt

For every claude-code corpus session (the whole session as one request) and
fixtures/example-request.json, at each tier forced (always, medium, high), it prints the sha256
of the output body, of the originals sent to CCR, and of the report's decisions and savings;
plus an incremental run (the session minus its last turn first, then the whole).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compress.config import CompressConfig  # noqa: E402
from compress.formats import read_session  # noqa: E402
from compress.jsonbytes import dumps  # noqa: E402
from compress.pipeline import run  # noqa: E402
from compress.session import Session  # noqa: E402
from compress.tiers import TierThresholds  # noqa: E402

CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
BIG = 10**12
TIERS = {"always": TierThresholds(BIG, BIG), "medium": TierThresholds(1, BIG), "high": TierThresholds(1, 1)}


class _RecordingStore:
    """A CCR writer that keeps the (text, hint) pairs it is given, in order."""

    def __init__(self) -> None:
        self.puts: list[tuple[str, str | None]] = []

    def batch(self):
        import contextlib
        return contextlib.nullcontext()

    def put(self, text: str, hint: str | None = None) -> str:
        self.puts.append((text, hint))
        return ""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _fingerprint(body: dict, config: CompressConfig, session: Session | None = None) -> str:
    store = _RecordingStore()
    result = run(body, session=session or Session.memory(), store=store, config=config)
    r = result.report
    report = {"mode": r.mode, "tier": r.tier, "after": r.tokens_after, "saved": r.stages_saved,
              "decisions": r.decisions, "errors": r.errors, "error": r.error}
    return " ".join((_sha(dumps(result.body)), _sha(dumps(store.puts)), _sha(dumps(report)), r.mode))


def _requests() -> list[tuple[str, dict]]:
    out = [("example-request", json.loads((ROOT / "fixtures" / "example-request.json").read_text()))]
    folder = CORPUS / "transcripts" / "claude-code"
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        out.append((path.stem, read_session(path).whole()))
    return out


def main() -> int:
    for name, body in _requests():
        for label, thresholds in TIERS.items():
            config = CompressConfig(tiers=thresholds)
            print(f"{name} {label} full {_fingerprint(body, config)}", flush=True)
            messages = body["messages"]
            cut = max((i for i, m in enumerate(messages[:-1]) if m.get("role") == "assistant"), default=0)
            if cut:
                session = Session.memory()
                run({**body, "messages": messages[:cut]}, session=session, store=_RecordingStore(), config=config)
                print(f"{name} {label} incr {_fingerprint(body, config, session)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
