"""The corpus's Codex sessions as Codex sends them in code mode: `python bench/codex_code_mode.py [--corpus DIR]`.

Codex 0.171 runs its GPT-6 models in code mode ([the Responses API](../docs/proxy.md)): each tool
call is a JavaScript program for the one `exec` tool, which calls the real tool, and each result
is what the program printed under exec's header. The corpus's Codex sessions were recorded on GPT-5
models, with plain function calls. This rewrites every call as the program that makes it
(`const r = await tools.exec_command({...}); text(r.output ?? r);`, `await tools.apply_patch("...")`)
and every result as exec's answer (`Script completed`, the wall time, `Output:`, then the recorded
output whole), and replays the sessions (`replay.runner.replay`, sums of costs, one run):

- as recorded (plain calls), for reference;
- in code mode, as ctxmill reads a program (`compress.vocab.codemode`: the calls it makes);
- in code mode, with every program's output read as "other" output, as ctxmill read them before
  it parsed programs (the files they touch are still known, so the needed lines are the same).

The agent's calls and outputs are the recorded ones; only their wrapping is code mode's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any
from unittest.mock import patch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import compress.vocab.tools as tools  # noqa: E402
from compress.formats.sessions import read_session  # noqa: E402
from replay.loo import Score  # noqa: E402
from replay.runner import replay  # noqa: E402

DEFAULT_CORPUS = Path(os.environ.get("CTXMILL_CORPUS", ROOT.parent / "shared" / "corpus"))
HEADER = "Script completed\nWall time 0.1 seconds\nOutput:\n"


def template(text: str) -> str:
    """`text` as a JavaScript template literal: its lines stay verbatim, as a model writes a patch."""
    return "`" + text.replace("\\", "\\\\").replace("`", "\\`").replace("${", "\\${") + "`"


def argument(value: Any) -> str:
    """A call's argument as a model writes it: strings as template literals, objects key by key."""
    if isinstance(value, str):
        return template(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {argument(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def as_code_mode(items: list[Any]) -> list[Any]:
    """Responses input items with each tool call rewritten as the `exec` program that makes it."""
    out = []
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "function_call":
            try:
                args = json.loads(item.get("arguments") or "{}")
            except ValueError:
                args = {}
            program = f"const r = await tools.{item.get('name')}({argument(args)});\ntext(r.output ?? r);"
            out.append({"type": "custom_tool_call", "call_id": item.get("call_id"), "name": "exec", "input": program,
                        "status": "completed"})
        elif kind == "custom_tool_call":
            program = f"await tools.{item.get('name')}({argument(item.get('input', ''))});\ntext('done');"
            out.append({**item, "name": "exec", "input": program})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            text = output if isinstance(output, str) else json.dumps(output)
            out.append({"type": "custom_tool_call_output", "call_id": item.get("call_id"), "output": HEADER + text})
        else:
            out.append(item)
    return out


def programs_unread() -> contextlib.AbstractContextManager:
    """ctxmill's tool kinds as before it read programs: every `exec` output is "other" output.
    Only the kind changes (`compress.vocab.tools._program_kind`), so the files a program touches,
    and the needed lines, stay as the programs-read replay counts them."""
    return patch.object(tools, "_program_kind", lambda kinds: tools.ToolKind.OTHER)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    files = sorted((args.corpus / "transcripts" / "codex").glob("*.jsonl"))
    variants = {"as recorded": (False, contextlib.nullcontext),
                "code mode": (True, contextlib.nullcontext),
                'code mode, every program\'s output read as "other" output': (True, programs_unread)}
    print(f"{len(files)} sessions\n| sessions | side | modelled | effective | needed (11+) |\n|---|---|---|---|---|")
    for name, (convert, context) in variants.items():
        totals = {side: Score() for side in ("cap", "ctxmill")}
        for path in files:
            transcript = read_session(path)
            if convert:
                transcript.messages = as_code_mode(transcript.messages)
            with context():
                report = replay(transcript, source=str(path))
            for side, total in totals.items():
                total.add(report, side)
        for side, total in totals.items():
            print(f"| {name} | {side} | {total.modelled_ratio:.3f} | {total.effective_ratio:.3f} | "
                  f"{total.needed.fraction():.3f} ({total.needed.fraction('11+'):.3f}) |", flush=True)

if __name__ == "__main__":
    main()
