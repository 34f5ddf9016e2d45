"""Runs inside headroom-ai's own venv (started by `replay.headroom_peer`): one request per line.

stdin: one JSON message list per line; stdout: headroom.compress()'s message list per line,
model-free (kompress_model="disabled"). Standalone: it imports nothing of ctxmill. The
environment is set up as the peers' guide asks: tiktoken's vocabulary from the copy litellm
ships (offline), an in-memory CCR store, no telemetry, a throw-away workspace.
"""

import contextlib
import importlib.util
import json
import os
import pathlib
import sys
import tempfile


def _setup_env() -> None:
    spec = importlib.util.find_spec("litellm")  # locates, does not import
    if "TIKTOKEN_CACHE_DIR" not in os.environ and spec is not None and spec.origin:
        vendored = pathlib.Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
        if vendored.is_dir():
            os.environ["TIKTOKEN_CACHE_DIR"] = str(vendored)
    workspace = tempfile.mkdtemp(prefix="headroom_ws_")
    os.environ.update({"HEADROOM_OFFLINE": "1", "HEADROOM_TELEMETRY": "off", "HEADROOM_CCR_BACKEND": "memory",
                       "HEADROOM_WORKSPACE_DIR": workspace, "HEADROOM_CONFIG_DIR": os.path.join(workspace, "config")})


def main() -> None:
    sys.path.remove(os.path.dirname(os.path.abspath(__file__)))  # its neighbours are not headroom's
    _setup_env()
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


if __name__ == "__main__":
    main()
