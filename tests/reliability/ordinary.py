"""Ordinary text without secrets, for measuring false positives of secret detection: the
project's own source, the tool outputs of fixtures/example-request.json, and generated tool
output full of near misses (hashes, ids, digests, `password` in code, `-p` flags, `$VARS`).
Every redaction in it is a false positive."""

from __future__ import annotations

import hashlib
import random
import uuid
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[2]
SOURCE_PACKAGES = ("compress", "ccr", "memory", "ctxmill")


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def source_files() -> list[tuple[str, str]]:
    return [(str(p.relative_to(REPO)), p.read_text("utf-8"))
            for package in SOURCE_PACKAGES for p in sorted((REPO / package).rglob("*.py"))]


def fixture_outputs() -> list[tuple[str, str]]:
    body = orjson.loads((REPO / "fixtures" / "example-request.json").read_bytes())
    return [(f"fixtures/example-request.json#{i}", s) for i, s in enumerate(_strings(body)) if len(s) > 40]


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def generated_near_misses(seed: int = 0, lines: int = 4000) -> str:
    """Tool output a coding agent sees every day, with the words and shapes secrets have."""
    rng = random.Random(seed)
    templates = [
        lambda: f"commit {_hex(rng, 40)}\nAuthor: Dev <dev@example.com>\n",
        lambda: f'      "integrity": "sha512-{hashlib.sha512(str(rng.random()).encode()).hexdigest()[:86]}==",',
        lambda: f"request_id={uuid.UUID(int=rng.getrandbits(128))} status=200 duration_ms={rng.randint(1, 900)}",
        lambda: f"sha256:{_hex(rng, 64)}  ghcr.io/acme/api:{rng.randint(1, 99)}.{rng.randint(0, 9)}",
        lambda: "def check_password(password: str, hashed: bytes) -> bool:",
        lambda: "    password = request.form.get('password')",
        lambda: "    if not verify(password=password, hash=user.password_hash):",
        lambda: "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
        lambda: f"  max_tokens: {rng.randint(256, 8192)}\n  input_tokens={rng.randint(1, 99999)}",
        lambda: "token = tokenizer.encode(text)[0]",
        lambda: "next_token = response.get('nextToken')",
        lambda: "api_key = os.environ[\"API_KEY\"]",
        lambda: "      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}",
        lambda: "DB_PASSWORD=<your-password-here>",
        lambda: "  password: {{ .Values.db.password }}",
        lambda: "        secretKeyRef:\n          name: db-credentials\n          key: password",
        lambda: "echo $CR_PAT | docker login ghcr.io -u USERNAME --password-stdin",
        lambda: "mkdir -p build/dist && cp -pr assets build/ && ssh -p 2222 deploy@host",
        lambda: "mysql --help | grep -e '-p, --password'",
        lambda: f"PWD=/home/dev/project-{rng.randint(1, 99)}\nOLDPWD=/tmp",
        lambda: "export interface Config { token: string; password?: string; secret: Secret }",
        lambda: f"  background: #{_hex(rng, 6)}; border: 1px solid #{_hex(rng, 3)};",
        lambda: f"arn:aws:iam::{rng.randint(10**11, 10**12 - 1)}:role/deploy-{_hex(rng, 6)}",
        lambda: f"https://bucket.s3.amazonaws.com/builds/{_hex(rng, 12)}.tar.gz?versionId={_hex(rng, 32)}",
        lambda: f"Downloading numpy-1.{rng.randint(20, 26)}.0-cp311-manylinux_x86_64.whl (18.2 MB)",
        lambda: f"tests/test_auth.py::test_login_with_token[{_hex(rng, 8)}] PASSED",
        lambda: f"{rng.randint(1, 200)} | const passwordInput = document.querySelector('#password');",
        lambda: "The token budget is exhausted; the secret to speed is caching (see docs).",
        lambda: f"Key fingerprint = {' '.join(_hex(rng, 4).upper() for _ in range(10))}",
        lambda: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_hex(rng, 43)} dev@laptop",
        lambda: f"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{_hex(rng, 40)}",
        lambda: "Set the API key in settings (Settings → API keys → Create key).",
        lambda: "if key == 'password': continue",
        lambda: f"cache key: v1-deps-{_hex(rng, 40)}",
        lambda: "auth_token = get_auth_token(session)",
        lambda: f"  \"version\": \"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 30)}\",",
    ]
    return "\n".join(rng.choice(templates)() for _ in range(lines))


def ordinary_texts() -> list[tuple[str, str]]:
    """(name, text) pairs; none holds a secret."""
    return [*source_files(), *fixture_outputs(), ("generated near misses", generated_near_misses())]
