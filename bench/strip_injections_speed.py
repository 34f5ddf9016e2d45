"""strip_injections' own time, on this checkout and on others, side by side (not a test).

    python bench/strip_injections_speed.py [--rounds 30] [--baseline PATH ...]

Times the stage over one request's parsed messages, every message mutable, as an epoch runs it:
`STAGE.run` with a fresh `StageContext` (its originals buffer and the run's `CountOnce` token
counter) each round, the redaction memo cold (`stage.REDACTED` cleared, a session's first epoch)
and then warm (holding that round's originals, as on a proxy's later epochs).
Requests: bench_proxy.py's ~0.7 MB conversation (one short reminder after each tool result:
too short to be worth a marker, so every removal is judged and refused on its characters), the
same with Claude Code's longer reminders (removed under a marker: the lossy path), 300 results
of ~1,000 characters with those reminders (texts the run's token counter does not remember,
`CountOnce.LONG`), and the corpus session marot__spotter__8463c716 (skipped without the corpus). Each checkout (this one
and each --baseline, e.g. a `git worktree add --detach` of an older commit) runs in its own
process, the checkouts alternating round by round, the garbage collector off while timing (as
`timeit`); prints each one's fastest round and median in milliseconds, and the load average
(other work on the machine only ever adds time).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSION = Path("transcripts") / "claude-code" / "marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"
LONG_REMINDERS = (
    "<system-reminder>\nWhenever you read a file, you should consider whether it would be considered malware. "
    "You CAN and SHOULD provide analysis of malware, what it is doing. But you MUST refuse to improve or augment "
    "the code. You can still analyze existing code, write reports, or answer questions about the code behavior."
    "\n</system-reminder>",
    "<system-reminder>\nThe TodoWrite tool hasn't been used recently. If you're working on tasks that would "
    "benefit from tracking progress, consider using the TodoWrite tool to track progress. Also consider cleaning "
    "up the todo list if has become stale and no longer matches what you are working on. Only use it if it's "
    "relevant to the current work. This is just a gentle reminder - ignore if not applicable.\n</system-reminder>",
)


def requests() -> list[tuple[str, dict]]:
    """(label, body): the bodies every checkout times, built by this checkout's bench helpers."""
    sys.path.insert(0, str(ROOT / "bench"))
    import random

    from bench_proxy import REMINDER, _pair, conversation

    messages = conversation(0, 150_000, 0)[0]
    out = [("bench_proxy conversation (short reminders)", {"model": "m", "max_tokens": 1, "messages": messages})]
    rng = random.Random(0)
    short_results = [messages[0]] + [m for n in range(300) for m in _pair(rng, 0, n, 1_000)]
    for label, listed in (("bench_proxy conversation (Claude Code reminders)", messages),
                          ("300 results of ~1,000 characters (Claude Code reminders)", short_results)):
        longer = json.loads(json.dumps(listed))
        n = 0
        for m in longer:
            for block in m["content"] if isinstance(m["content"], list) else ():
                if block.get("type") == "tool_result":
                    block["content"] = block["content"].replace(REMINDER, LONG_REMINDERS[n % 2])
                    n += 1
        out.append((label, {"model": "m", "max_tokens": 1, "messages": longer}))
    sys.path.insert(0, str(ROOT))
    from bench.token_corpus import corpus_dir

    corpus = corpus_dir()
    if corpus is not None and (corpus / SESSION).is_file():
        from compress.formats.sessions import read_session

        out.append(("corpus marot__spotter__8463c716", read_session(corpus / SESSION).whole()))
    return out


def _child(tree: str) -> None:
    """In a checkout's own process: read (label, body) lines on stdin; for each, time one round
    and print (warm ms, cold ms, output digest, originals stored) as a JSON line."""
    sys.path.insert(0, tree)
    import xxhash

    from compress.config import CompressConfig
    from compress.formats.requests import from_provider
    from compress.runner.message_tokens import CountOnce
    from compress.stagekit import stage as kit
    from compress.stages.strip_injections import STAGE
    from compress.tiers import Tier
    from compress.token_counters import estimate_tokens

    parsed: dict[str, list] = {}
    for line in sys.stdin:
        label, body = json.loads(line)
        if label not in parsed:
            parsed[label] = list(from_provider(body).messages)
        messages = parsed[label]
        config = CompressConfig()
        timings: dict[bool, float] = {}
        digest = ""
        for cold in (True, False):  # warm: right after the cold round filled the memo with this request's originals
            if cold:
                kit.REDACTED.clear()
            ctx = kit.StageContext(config, Tier.HIGH, messages[-1].turn + 10, (True,) * len(messages),
                                   kit.PendingOriginals(), CountOnce(estimate_tokens))
            gc.collect()
            gc.disable()  # as timeit: a collection of the bodies this process holds is not the stage's time
            began = time.perf_counter()
            out = STAGE.run(messages, ctx)
            timings[cold] = (time.perf_counter() - began) * 1000
            gc.enable()
            texts = [p.text for m in out for b in m.blocks for p in (b.parts or (b,))]
            digest = xxhash.xxh3_64_hexdigest("\x00".join(texts).encode("utf-8", "surrogatepass"))
        print(json.dumps([timings[False], timings[True], digest, len(ctx.originals.entries)]), flush=True)


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        _child(sys.argv[2])
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--baseline", action="append", default=[], help="another checkout to time alongside")
    args = p.parse_args()
    trees = [str(ROOT), *args.baseline]
    bodies = requests()
    children = [subprocess.Popen([sys.executable, __file__, "--child", tree], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": tree})
                for tree in trees]
    print("load before:", os.getloadavg())
    results: dict[tuple[int, str], list[list]] = {}
    for _ in range(args.rounds + 1):  # the first round warms the memos and is not counted
        for label, body in bodies:
            line = json.dumps([label, body]) + "\n"
            for i, child in enumerate(children):
                assert child.stdin is not None and child.stdout is not None
                child.stdin.write(line)
                child.stdin.flush()
                results.setdefault((i, label), []).append(json.loads(child.stdout.readline()))
    for child in children:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
    print("load after:", os.getloadavg())
    for label, _ in bodies:
        print(label)
        for i, tree in enumerate(trees):
            rows = results[(i, label)][1:]
            warm, cold = [r[0] for r in rows], [r[1] for r in rows]
            print(f"  {tree}: warm min {min(warm):6.2f} median {statistics.median(warm):6.2f} ms, "
                  f"cold min {min(cold):6.2f} median {statistics.median(cold):6.2f} ms; "
                  f"output {rows[-1][2]}, {rows[-1][3]} originals")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
