"""Same input and state, same bytes, in any process: nothing the pipeline renders depends on
Python's per-process string hashing (PYTHONHASHSEED), which a proxy replica, a hook process and
a restarted worker each draw afresh. (A patch that deletes and re-adds a file at once made a
note say "deleted" in one process and "re-created" in another: set order.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.chain_checks import anthropic_body

REPO = Path(__file__).resolve().parents[1]
BODY_LINES = "\n".join(f"+    <div class=\"row-{i}\">{i}</div>" for i in range(40))
RENDER = """
import json, sys
from dataclasses import replace
from ccr.store import CCRStore
from compress.runner.pipeline import run
from compress.state.session import Session
from ground.jsonbytes import dumps
from tests.chain_checks import OPEN_CONFIG
config = replace(OPEN_CONFIG, stage_options={"supersede_inputs": {"settled_after_turns": 0}})
result = run(json.load(sys.stdin), session=Session.memory(), store=CCRStore.in_memory(), config=config)
sys.stdout.buffer.write(dumps(result.body))
"""


def _request() -> dict:
    created = f"*** Begin Patch\n*** Add File: src/App.vue\n{BODY_LINES}\n*** End Patch"
    recreated = ("*** Begin Patch\n*** Delete File: src/App.vue\n*** Add File: src/App.vue\n"
                 f"{BODY_LINES.replace('row', 'line')}\n*** End Patch")
    calls = [("apply_patch", {"input": created}, "Done"), ("apply_patch", {"input": recreated}, "Done")]
    calls += [("Bash", {"command": f"echo {i}"}, f"{i}") for i in range(6)]
    return anthropic_body(calls)


def _render(seed: int, body: dict) -> bytes:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", RENDER], input=json.dumps(body).encode(), env=env,
                          capture_output=True, cwd=REPO, check=True)
    return done.stdout


def test_a_request_renders_the_same_bytes_whatever_the_hash_seed():
    body = _request()
    outputs = {_render(seed, body) for seed in range(6)}
    assert len(outputs) == 1
    (out,) = outputs
    assert b"of src/App.vue stored; the file was" in out  # the note the seed used to decide
