"""Secret redaction: replace credentials in text with `[REDACTED:<kind>]` before it is stored.

`redact(text, extra_patterns=())` covers AWS access keys and secret keys, GitHub, Anthropic,
OpenAI and Slack tokens, Slack webhooks, JWTs, PEM private keys, passwords in URLs and generic
`password=` / `api_key:` / `token:` assignments. `extra_patterns` adds regexes, each either a
pattern string (kind `custom`) or a `(kind, pattern)` pair; a pattern with a group named
`secret` redacts only that group.

Every built-in pattern is written so matching stays linear in the text length: possessive or
bounded quantifiers only, no nested unbounded repetition. Redaction is idempotent: the
placeholder itself never matches a pattern. This module imports nothing from the project, so
every engine can reuse it.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import regex

# (kind, pattern). When a pattern has a group named `secret`, only that group is replaced.
_BUILTIN: tuple[tuple[str, str], ...] = (
    (
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY-----(?:[^-]++|-(?!----END))*+"
        r"(?:-----END (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY-----)?+",
    ),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+"),
    ("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    (
        "aws_secret_key",
        r"(?i)\baws_?secret_?(?:access_?)?key[\"']?+\s*+[:=]\s*+[\"']?+(?P<secret>[A-Za-z0-9/+=]{40})\b",
    ),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}+|github_pat_[A-Za-z0-9_]{22,255}+)"),
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_-]{20,}+"),
    ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?+[A-Za-z0-9_-]{20,}+"),
    ("slack_token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}+"),
    ("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{10,}+"),
    (
        "url_password",
        r"\b[A-Za-z][A-Za-z0-9+.-]{0,30}+://[^\s:/@]{1,256}+:(?P<secret>[^\s@/]{1,256}+)@",
    ),
    (
        "password",
        r"(?i)\b(?:password|passwd|pwd|passphrase)[\"']?+\s*+[:=]\s*+[\"']?+"
        r"(?P<secret>[^\s\"'`,;()\[\]{}<>$%]{4,512}+)(?![(\[])",
    ),
    (
        "api_key",
        r"(?i)\b(?:api|access|auth|secret|client|private)[_-]?(?:key|token|secret)[\"']?+\s*+[:=]\s*+[\"']?+"
        r"(?P<secret>[^\s\"'`,;()\[\]{}<>$%]{6,512}+)(?![(\[])",
    ),
    (
        "token",
        r"(?i)\b(?:token|secret|bearer)[\"']?+\s*+[:=]\s*+[\"']?+(?P<secret>[A-Za-z0-9_\-./+=]{12,512}+)",
    ),
    ("token", r"(?i)\bbearer\s++(?P<secret>[A-Za-z0-9_\-.~+/]{20,512}+=*+)"),
)


@lru_cache(maxsize=256)
def _compiled(kind: str, pattern: str) -> tuple[str, regex.Pattern]:
    return kind, regex.compile(pattern, regex.V0)


def _patterns(extra: Iterable[str | tuple[str, str]]) -> list[tuple[str, regex.Pattern]]:
    found = [_compiled(kind, pattern) for kind, pattern in _BUILTIN]
    for item in extra:
        kind, pattern = ("custom", item) if isinstance(item, str) else item
        found.append(_compiled(kind, pattern))
    return found


def _replacer(kind: str):
    placeholder = f"[REDACTED:{kind}]"

    def replace(match: regex.Match) -> str:
        if "secret" not in match.re.groupindex or match.start("secret") < 0:
            return placeholder
        whole, start, end = match.group(0), match.start("secret") - match.start(), match.end("secret") - match.start()
        return whole[:start] + placeholder + whole[end:]

    return replace


def redact(text: str, extra_patterns: Iterable[str | tuple[str, str]] = ()) -> str:
    """Return `text` with every recognised secret replaced by `[REDACTED:<kind>]`."""
    for kind, pattern in _patterns(extra_patterns):
        text = pattern.sub(_replacer(kind), text)
    return text
