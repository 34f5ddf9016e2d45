"""Crude text samples from the shared transcript corpus, labelled by category, for token calibration.

Only pulls strings out (message texts, tool inputs, tool outputs); it does not understand
conversations. Categories: english, chinese, japanese, code, logs, json.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

CATEGORIES = ("english", "chinese", "japanese", "code", "logs", "json")
MIN_CHARS = 64

# keys whose string values are natural-language messages written by a user or a model
_PROSE_KEYS = frozenset({"text", "thinking", "reasoning", "content", "message", "thought", "response", "summary"})
# keys whose values are tool arguments (dicts or JSON strings)
_INPUT_KEYS = frozenset({"input", "toolInput", "arguments", "args"})
# opaque or binary payloads: not text anyone counts tokens for
_SKIP_KEYS = frozenset({"signature", "encrypted_content", "data", "image_url", "uuid", "parentUuid", "sessionId"})
# containers whose strings are tool results, whatever their key
_OUTPUT_TYPES = frozenset({"tool_result", "function_call_output", "tool"})
_BASE64 = re.compile(r"[A-Za-z0-9+/=]{200,}")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_CODE_LINE = re.compile(
    r"[{};]\s*$|^\s*\d+\u2192|^\s*(def|class|import|from|function|const|let|var|return|if|for|"
    r"export|#include|public|private|async|await|elif|else|try|except|fn|impl|use|package)\b"
)


def corpus_dir() -> Path | None:
    """The shared corpus beside the repository (or $CTXMILL_CORPUS), None when absent."""
    env = os.environ.get("CTXMILL_CORPUS")
    path = Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
    return path if (path / "transcripts").is_dir() else None


def transcript_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "transcripts").rglob("*") if p.suffix in {".jsonl", ".json", ".traj"})


def _records(path: Path) -> Iterator[object]:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".jsonl":
        for line in text.splitlines():
            try:
                yield json.loads(line)
            except ValueError:
                continue
    else:
        yield json.loads(text)


def _is_tool_output(node: dict) -> bool:
    """A record or block that holds a tool's output. `type` is not always a string: a JSON
    schema inside a tool definition may say `"type": ["string", "null"]`."""
    kind = node.get("type")
    return (isinstance(kind, str) and kind in _OUTPUT_TYPES) or node.get("role") == "tool" or "toolUseResult" in node


def _strings(node: object, key: str = "", in_output: bool = False) -> Iterator[tuple[str, str]]:
    """(kind, text) pairs: kind is 'prose', 'input' or 'output' from where the string sits."""
    if key in _SKIP_KEYS:
        return
    if isinstance(node, dict):
        if key in _INPUT_KEYS:
            yield "input", json.dumps(node, ensure_ascii=False, indent=None)
        in_output = in_output or _is_tool_output(node)
        for k, v in node.items():
            yield from _strings(v, k, in_output)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v, key, in_output)
    elif isinstance(node, str) and len(node) >= MIN_CHARS:
        if key in _INPUT_KEYS:
            yield "input", node
        else:
            yield ("prose" if key in _PROSE_KEYS and not in_output else "output"), node


def _looks_like_code(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return bool(lines) and sum(1 for ln in lines if _CODE_LINE.search(ln)) >= 0.3 * len(lines)


def _is_json(text: str) -> bool:
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def categorize(kind: str, text: str) -> str | None:
    """Category label for a sample, None for base64 blobs."""
    if _BASE64.search(text) and len(_BASE64.findall(text)) * 200 > len(text) // 2:
        return None
    cjk = len(_CJK.findall(text))
    if cjk >= 0.3 * max(1, len(text) - text.count(" ") - text.count("\n")):
        return "japanese" if len(_KANA.findall(text)) >= 0.1 * cjk else "chinese"
    if _is_json(text):
        return "json"
    if kind == "prose":
        return "english"
    return "code" if _looks_like_code(text) else "logs"


def file_samples(path: Path) -> list[tuple[str, str]]:
    """Distinct (category, text) samples of one transcript file."""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for record in _records(path):
        for kind, text in _strings(record):
            if text in seen:
                continue
            seen.add(text)
            category = categorize(kind, text)
            if category:
                out.append((category, text))
    return out
