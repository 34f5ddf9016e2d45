"""ctxmill's redaction rules against Yelp's detect-secrets: canaries caught, false positives, speed.

Run: `pip install detect-secrets` then `python bench/redact_detectors.py [--repeat N]`.

- Canaries (`tests/reliability/canaries.py`): a canary is caught when, after redaction, no
  part of its secret is left (`leaked`).
- False positives: redactions in ordinary text (`tests/reliability/ordinary.py`: the project's
  source, the example request's tool outputs, generated near misses), each one counted.
- Speed: MB/s of redacting that ordinary text and the canary text, best of `--repeat` runs.

detect-secrets is run the way it scans a file (every default plugin, every default filter,
keyword and entropy checks included) over the text as `tool-output.txt`; each secret value it
reports is replaced where it occurs in its line.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from ground.redact import redact  # noqa: E402
from tests.reliability.canaries import CANARIES, canary_text, leaked  # noqa: E402
from tests.reliability.ordinary import ordinary_texts  # noqa: E402


def detect_secrets_redactor() -> Callable[[str], str]:
    from detect_secrets.core.scan import _process_line_based_plugins
    from detect_secrets.settings import default_settings

    def redact_with_detect_secrets(text: str) -> str:
        lines = text.split("\n")
        with default_settings():
            found = list(_process_line_based_plugins(list(enumerate(lines, 1)), filename="tool-output.txt"))
        for secret in found:
            if secret.secret_value:
                i = secret.line_number - 1
                lines[i] = lines[i].replace(secret.secret_value, "[REDACTED:detect-secrets]")
        return "\n".join(lines)

    return redact_with_detect_secrets


def combined(first: Callable[[str], str], second: Callable[[str], str]) -> Callable[[str], str]:
    return lambda text: second(first(text))


def false_positives(redactor: Callable[[str], str], texts: list[tuple[str, str]]) -> tuple[int, list[str]]:
    count, where = 0, []
    for name, text in texts:
        n = redactor(text).count("[REDACTED:") - text.count("[REDACTED:")
        if n:
            count += n
            where.append(f"{name} ×{n}")
    return count, where


def speed(redactor: Callable[[str], str], text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        redactor(text)
        best = min(best, time.perf_counter() - t0)
    return len(text.encode()) / best / 2**20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    texts = ordinary_texts()
    plain = "\n".join(t for _, t in texts)
    secrets = canary_text(filler=200) * 5
    detectors = {"ctxmill (ground/redact.py)": redact}
    try:
        ds = detect_secrets_redactor()
        detectors["detect-secrets 1.5 (defaults)"] = ds
        detectors["ctxmill then detect-secrets"] = combined(redact, ds)
    except ImportError:
        print("detect-secrets is not installed: pip install detect-secrets")
    print(f"{len(CANARIES)} canaries; ordinary text: {len(texts)} texts, {len(plain):,} chars")
    for name, redactor in detectors.items():
        missed = [c.name for c in CANARIES if leaked(redactor(c.text))]
        fp, where = false_positives(redactor, texts)
        print(f"\n{name}: canaries caught {len(CANARIES) - len(missed)}/{len(CANARIES)}, "
              f"false positives {fp}; ordinary text {speed(redactor, plain, args.repeat):.2f} MB/s, "
              f"canary text {speed(redactor, secrets, args.repeat):.2f} MB/s")
        if missed:
            print("  missed: " + ", ".join(missed))
        if where:
            print("  false positives in: " + "; ".join(where[:12]) + (" …" if len(where) > 12 else ""))


if __name__ == "__main__":
    main()
