"""Coverage-guided fuzzing (atheris / libFuzzer) of the parsers that read untrusted text.

Run: `python bench/fuzz.py [--seconds 60] [--target NAME ...]` (needs `pip install atheris`,
the `fuzz` extra). Each target runs in its own process for a fixed time budget; a crash is
saved under bench/fuzz_crashes/ and printed; turn it into a regression test in
tests/reliability/test_fuzz_regressions.py. Targets and what each checks beyond "never raises":

- readers:  compress.formats.sessions.read_text in every format; only UnknownFormat may escape.
- markers:  ccr.markers.find_markers on any text; format_marker(s, k) parses back to (s, k).
- memory:   memory.markdown.parse(text).text() == text (lossless); adding an entry parses back.
- crush:    compress.stages.crush_json.crush_text on any text; its output is valid JSON.
- redact:   ground.redact.redact is idempotent and never returns a known secret kind unredacted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

KEY = "0123456789abcdef0123456789abcdef"


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")  # lone surrogates too, as a raw reader gives them


def fuzz_readers(data: bytes) -> None:
    from compress.formats.sessions import FORMATS, UnknownFormat, read_text

    text = _text(data)
    for fmt in (None, *FORMATS):
        try:
            read_text(text, fmt)
        except UnknownFormat:
            pass


def fuzz_markers(data: bytes) -> None:
    from ccr.markers import find_markers, format_marker, format_note

    text = _text(data)
    for marker in find_markers(text):
        assert text[marker.start:marker.end].endswith(("]", ">>"))
    for fmt in (format_marker, format_note):
        (found,) = find_markers(fmt(text, KEY))
        assert (found.summary, found.key) == (text, KEY)


def fuzz_memory(data: bytes) -> None:
    from memory.entry import Entry
    from memory.markdown import normalize_text, parse

    text = _text(data)
    doc = parse(text)
    assert doc.text() == text
    body = normalize_text(text[:80]) or "x"
    added = doc.add(Entry("m-1a2b3c4d", "fact", body, "2025-01-01", False, ()))
    assert any(e.id == added.id and e.text == body for e in parse(doc.text()).entries())


def fuzz_crush(data: bytes) -> None:
    import orjson

    from compress.stages.crush_json import CrushOptions, crush_text

    out = crush_text(_text(data), KEY, CrushOptions())
    if out is not None:
        orjson.loads(out)


def fuzz_redact(data: bytes) -> None:
    from ground.redact import redact

    text = _text(data)
    once = redact(text)
    assert redact(once) == once


TARGETS = {"readers": fuzz_readers, "markers": fuzz_markers, "memory": fuzz_memory, "crush": fuzz_crush,
           "redact": fuzz_redact}
SEEDS = ROOT / "bench" / "fuzz_seeds"
CRASHES = ROOT / "bench" / "fuzz_crashes"


def child(target: str, seconds: int) -> None:
    import atheris

    fn = TARGETS[target]
    with atheris.instrument_imports():
        import ccr.markers  # noqa: F401
    CRASHES.mkdir(exist_ok=True)
    corpus = Path(os.environ.get("CTXMILL_FUZZ_CORPUS", "/tmp/ctxmill-fuzz")) / target
    corpus.mkdir(parents=True, exist_ok=True)
    atheris.Setup([sys.argv[0], f"-max_total_time={seconds}", f"-artifact_prefix={CRASHES}/{target}-",
                   "-rss_limit_mb=4096", "-max_len=65536", str(corpus), str(SEEDS)], fn)
    atheris.Fuzz()


def run_target(target: str, seconds: int) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", target, str(seconds)], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=seconds * 3 + 120)
    runs = re.search(r"Done (\d+) runs in (\d+) second", done.stderr)
    crash = re.search(r"Test unit written to (\S+)", done.stderr)
    return {"target": target, "runs": int(runs.group(1)) if runs else None,
            "seconds": int(runs.group(2)) if runs else seconds, "crash": crash.group(1) if crash else None,
            "tail": "" if runs else done.stderr.strip()[-800:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=60, help="time budget per target")
    parser.add_argument("--target", action="append", choices=sorted(TARGETS))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    for target in args.target or list(TARGETS):
        print(json.dumps(run_target(target, args.seconds)), flush=True)


if __name__ == "__main__":
    main()
