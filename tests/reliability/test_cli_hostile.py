"""Hostile input at the command line: every unusable input is one line on stderr and a non-zero
exit (never a traceback, never a hang on a pipe or a device), usable input is processed without
changing what it does not understand, and secrets given to the CLI are not written in plain text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

from tests.chain_checks import anthropic_body
from tests.reliability.leaky import SECRETS, leaky_text
from tests.reliability.tally import record

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120  # seconds; a liveness bound on a busy machine, not a speed claim


def cli(tmp_path: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CTXMILL_HOME": str(tmp_path / ".ctxmill"),
           "XDG_DATA_HOME": str(tmp_path / "xdg")}
    return subprocess.run([sys.executable, "-m", "ctxmill", *args], input=stdin, capture_output=True, env=env,
                          cwd=tmp_path, timeout=TIMEOUT)


def one_clear_line(done: subprocess.CompletedProcess) -> bool:
    err = done.stderr.decode(errors="replace").strip()
    return done.returncode in (1, 2) and len(err.splitlines()) == 1 and "Traceback" not in err


def _files(tmp_path: Path) -> dict[str, Path]:
    def write(name: str, data: bytes) -> Path:
        path = tmp_path / name
        path.write_bytes(data)
        return path

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    sparse = tmp_path / "sparse.json"
    with open(sparse, "wb") as out:
        out.truncate(3 * 2**30)
    user = b'{"role":"user","content":"hi"}'
    return {
        "a named pipe without a writer": fifo, "/dev/zero": Path("/dev/zero"), "a folder": tmp_path,
        "missing": tmp_path / "missing.json", "a 3 GB sparse file": sparse,
        "empty": write("empty.json", b""), "not JSON": write("text.json", b"hello"),
        "invalid UTF-8": write("latin1.json", b'{"messages": ["\xe9"]}'),
        "nested 100,000 deep": write("deep.json", b'{"messages":[' + b"[" * 100_000 + b"]" * 100_000 + b"]}"),
        "an integer beyond 64 bits": write("bigint.json", b'{"model":"m","n":123456789012345678901234567890,'
                                                          b'"messages":[' + user + b"]}"),
        "a negative integer beyond 64 bits": write("negint.json",
                                                   b'{"messages":[' + user + b'],"n":-9223372036854775809}'),
        "messages not a list": write("obj.json", b'{"messages": {"a": 1}}'),
        "top-level array": write("arr.json", b"[1,2,3]"),
        "NaN": write("nan.json", b'{"messages": [' + user + b'], "t": NaN}'),
        "binary": write("bin.json", bytes(range(256)) * 100),
    }


def test_unusable_request_files_are_one_line_errors(tmp_path):
    loud = []
    files = _files(tmp_path)
    for name, path in files.items():
        done = cli(tmp_path, "compress", str(path), "-o", str(tmp_path / "out.json"))
        if not one_clear_line(done) or (tmp_path / "out.json").exists():
            loud.append((name, done.returncode, done.stderr[-300:]))
    for name in ("/dev/zero", "a 3 GB sparse file"):  # the same through stdin
        with open(files[name], "rb") as source:
            done = subprocess.run([sys.executable, "-m", "ctxmill", "compress", "-"], stdin=source,
                                  capture_output=True, timeout=TIMEOUT, cwd=tmp_path,
                                  env={**os.environ, "PYTHONPATH": str(ROOT), "CTXMILL_HOME": str(tmp_path / "h")})
        if not one_clear_line(done):
            loud.append(("stdin: " + name, done.returncode, done.stderr[-300:]))
    record("CLI", "unusable request files and streams", len(files) + 2, lost=len(loud))
    assert loud == []


def test_big_integers_are_refused_not_rounded(tmp_path):
    path = tmp_path / "bigint.json"
    path.write_bytes(b'{"model":"m","id":18446744073709551616,"messages":[{"role":"user","content":"hi"}]}')
    done = cli(tmp_path, "compress", str(path))
    assert one_clear_line(done) and b"beyond 64 bits" in done.stderr and done.stdout == b""
    path.write_bytes(b'{"model":"m","id":18446744073709551615,'
                     b'"messages":[{"role":"user","content":"12345678901234567890123"}]}')
    done = cli(tmp_path, "compress", str(path))
    assert done.returncode == 0 and orjson.loads(done.stdout) == orjson.loads(path.read_bytes())  # exact at the edge


BAD_COMMANDS = [
    ("expand", "../../etc/passwd"), ("expand", ""), ("expand", "0" * 33), ("expand", "A" * 32),
    ("expand", "%2e%2e%2f" * 4), ("expand", "0" * 32, "--lines", "abc"), ("expand", "0" * 32, "--lines", "9:3"),
    ("expand", "0" * 32, "--grep", "["), ("memory", "store", "--type", "nonsense", "text"),
    ("memory", "store", "--type", "fact", ""), ("memory", "forget", "m-doesnotexist"),
    ("memory", "forget", "../../x"), ("checkpoint", "/dev/zero"), ("checkpoint", "/nonexistent.jsonl"),
    ("replay", "/dev/zero"), ("compress", "--input-tokens", "-5", "/dev/null"),
    ("history", "search", "[", "--regex"), ("history", "search", "x", "--since", "soon"), ("history", "get", "", "1"),
    ("history", "get", "s", "1:x"), ("import", "/dev/zero"), ("distill", "/nonexistent.jsonl"),
]


def test_bad_arguments_are_one_line_errors(tmp_path):
    seeded = tmp_path / "req.json"
    seeded.write_bytes(orjson.dumps(anthropic_body([("Bash", {"command": "make"}, "compiling\n" * 2000)] * 2)))
    assert cli(tmp_path, "compress", str(seeded), "-o", str(tmp_path / "o.json")).returncode == 0  # a CCR store exists
    loud = [(args, d.returncode, d.stderr[-300:]) for args in BAD_COMMANDS
            if not one_clear_line(d := cli(tmp_path, *args))]
    record("CLI", "bad keys, ranges, regexes, types, ids and paths", len(BAD_COMMANDS), lost=len(loud))
    assert loud == []


def test_hostile_memory_text_is_stored_redacted_or_refused(tmp_path):
    texts = ["x" * 100_000, "a\x01b\x1b[31mred\x1b[0m", "<!-- m-deadbeef 2026-01-01 pinned -->", "- [fact] nested",
             "```\nunclosed fence", "\u202e\u2028\u2029 bidi and separators", leaky_text(2)]
    loud = []
    for text in texts:
        done = cli(tmp_path, "memory", "store", "--type", "fact", "--", text)
        if done.returncode not in (0, 2) or "Traceback" in done.stderr.decode(errors="replace"):
            loud.append((text[:40], done.returncode, done.stderr[-200:]))
    listed = cli(tmp_path, "memory", "list")
    on_disk = b"".join(p.read_bytes() for p in (tmp_path / ".ctxmill").rglob("*") if p.is_file())
    leaked = [kind for kind, secret in SECRETS.items() if secret.encode() in on_disk + listed.stdout]
    record("CLI", "hostile memory entries", len(texts), lost=len(loud), leaked=len(leaked))
    assert listed.returncode == 0 and loud == [] and leaked == []
