"""Fingerprint the pipeline's output so a speed-up can prove it changed no byte.

    python bench/output_hashes.py > before.txt   # on the old code
    python bench/output_hashes.py > after.txt    # on the new code; then: diff before.txt after.txt

For every corpus session of every format (the whole session as one request), generated
requests (fixtures/make_example.py at three sizes) and fixtures/example-request.json, at each tier
forced (always, medium, high), it prints the sha256 of the output body, of the originals sent to
CCR, and of the report's decisions and savings; plus an incremental run (the session minus its
last turn first, then the whole). For every corpus session it also fingerprints the checkpoint
extraction, and for the small ones a replay report (timings left out).
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
from compress.formats.requests import SHAPES, detect  # noqa: E402
from compress.formats.sessions import read_session, session_files  # noqa: E402
from compress.runner.pipeline import run  # noqa: E402
from compress.state.session import Session  # noqa: E402
from compress.tiers import TierThresholds  # noqa: E402
from ground.jsonbytes import dumps  # noqa: E402

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


def _sessions() -> list:
    root = CORPUS / "transcripts"
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    return [(f"{folder.name}/{path.stem}", read_session(path)) for folder in folders for path in session_files(folder)]


def _requests(sessions: list) -> list[tuple[str, dict]]:
    sys.path.insert(0, str(ROOT / "fixtures"))
    from make_example import build

    out = [("example-request", json.loads((ROOT / "fixtures" / "example-request.json").read_text()))]
    out += [(f"generated-{rounds}", build(rounds)) for rounds in (1, 3, 9)]
    return out + [(name, transcript.whole()) for name, transcript in sessions]


def _extraction_fingerprint(transcript) -> str:
    import dataclasses

    from compress.formats.requests import from_provider
    from memory.extract import extract

    return _sha(dumps(dataclasses.asdict(extract(from_provider(transcript.whole()).messages))))


def _replay_fingerprint(transcript) -> str:
    from replay.runner import replay

    data = replay(transcript).to_dict()
    for key in ("seconds", "ms_p50", "ms_p95", "ms_max"):
        data.pop(key, None)
    return _sha(dumps(data))


def main() -> int:
    sessions = _sessions()
    for name, transcript in sessions:
        print(f"{name} extract {_extraction_fingerprint(transcript)}", flush=True)
        if len(transcript.calls) <= 60:
            print(f"{name} replay {_replay_fingerprint(transcript)}", flush=True)
    for name, body in _requests(sessions):
        for label, thresholds in TIERS.items():
            config = CompressConfig(tiers=thresholds)
            print(f"{name} {label} full {_fingerprint(body, config)}", flush=True)
            shape = SHAPES[detect(body)]
            messages = body[shape.MESSAGES_FIELD]
            cut = max((i for i, m in enumerate(messages[:-1]) if shape.parse_message(m).role == "assistant"), default=0)
            if cut:
                session = Session.memory()
                run({**body, shape.MESSAGES_FIELD: messages[:cut]}, session=session, store=_RecordingStore(),
                    config=config)
                print(f"{name} {label} incr {_fingerprint(body, config, session)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
