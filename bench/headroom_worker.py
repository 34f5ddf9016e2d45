"""Runs inside headroom-ai's own venv (see bench/replay_corpus.py): one request per line.

stdin: one JSON message list per line; stdout: headroom.compress()'s message list per line
(model-free: kompress_model="disabled"). The environment is prepared exactly as
../shared/peers/run_headroom.py does (offline tiktoken vocabulary, in-memory CCR).
"""

import contextlib
import json
import sys
import tempfile

sys.path.insert(0, sys.argv[1])  # the folder holding run_headroom.py
import run_headroom  # noqa: E402

run_headroom._setup_env("default", tempfile.mkdtemp(prefix="headroom_ws_"))
out = sys.stdout
with contextlib.redirect_stdout(sys.stderr):
    import headroom

    for line in sys.stdin:
        messages = json.loads(line)
        try:
            result = headroom.compress(messages, model="gpt-4o", kompress_model="disabled").messages
        except Exception as exc:  # noqa: BLE001 - a peer failure passes the request through
            print(f"headroom failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            result = messages
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
        out.flush()
