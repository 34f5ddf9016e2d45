"""Secret redaction: replace credentials in text with `[REDACTED:<kind>]` before it is stored.

`redact(text, redact_extra=(), redact_allow=())` covers AWS access keys and secret keys, GitHub, Anthropic,
OpenAI and Slack tokens, Slack webhooks, JWTs, PEM private keys, passwords in URLs and generic
`password=` / `api_key:` / `token:` assignments. `redact_extra` adds regexes, each either a
pattern string (kind `custom`) or a `(kind, pattern)` pair; a pattern with a group named
`secret` redacts only that group. `redact_allow` lists regexes for values that must stay (e.g. a
public test key): a match whose redacted part fully matches one of them is kept.

Redaction runs on the hot path (every original committed to CCR), so each built-in pattern
has literal triggers: it runs only when one of them occurs in the lower-cased text. Text with
no trigger costs one `lower()` and one scan for all triggers (see bench/secrets_cost.py).

Every built-in pattern is written so matching stays linear in the text length: possessive or
bounded quantifiers only, no nested unbounded repetition. Redaction is idempotent: the
placeholder itself never matches a pattern. This module imports nothing from the project, so
every engine can reuse it.
"""

from __future__ import annotations

from collections.abc import Iterable
import re
from functools import lru_cache

import regex

# (kind, literal triggers (lower case), pattern). When a pattern has a group named `secret`, only that group is replaced.
_BUILTIN: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "private_key", ("private key",),
        r"-----BEGIN (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY-----(?:[^-]++|-(?!----END))*+"
        r"(?:-----END (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY-----)?+",
    ),
    ("jwt", ("eyj",), r"\beyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+"),
    ("aws_access_key", ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa"), r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    (
        "aws_secret_key", ("secret",),
        r"(?i)\baws_?secret_?(?:access_?)?key[\"']?+\s*+[:=]\s*+[\"']?+(?P<secret>[A-Za-z0-9/+=]{40})\b",
    ),
    ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}+|github_pat_[A-Za-z0-9_]{22,255}+)"),
    ("anthropic_key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_-]{20,}+"),
    ("openai_key", ("sk-",), r"\bsk-(?:proj-|svcacct-|admin-)?+[A-Za-z0-9_-]{20,}+"),
    ("slack_token", ("xox",), r"\bxox[abposre]-[A-Za-z0-9-]{10,}+"),
    ("slack_webhook", ("hooks.slack.com",), r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{10,}+"),
    (
        "url_password", ("://",),
        r"\b[A-Za-z][A-Za-z0-9+.-]{0,30}+://[^\s:/@]{1,256}+:(?P<secret>[^\s@/]{1,256}+)@",
    ),
    (
        "password", ("passw", "pwd", "passphrase"),
        r"(?i)\b(?:password|passwd|pwd|passphrase)[\"']?+\s*+[:=]\s*+[\"']?+"
        r"(?P<secret>[^\s\"'`,;()\[\]{}<>$%]{4,512}+)(?![(\[])",
    ),
    (
        "api_key", ("key", "token", "secret"),
        r"(?i)\b(?:api|access|auth|secret|client|private)[_-]?(?:key|token|secret)[\"']?+\s*+[:=]\s*+[\"']?+"
        r"(?P<secret>[^\s\"'`,;()\[\]{}<>$%]{6,512}+)(?![(\[])",
    ),
    (
        "token", ("token", "secret", "bearer"),
        r"(?i)\b(?:token|secret|bearer)[\"']?+\s*+[:=]\s*+[\"']?+(?P<secret>[A-Za-z0-9_\-./+=]{12,512}+)",
    ),
    ("token", ("bearer",), r"(?i)\bbearer\s++(?P<secret>[A-Za-z0-9_\-.~+/]{20,512}+=*+)"),
)


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> regex.Pattern:
    return regex.compile(pattern, regex.V0)


_TRIGGERS = re.compile("|".join(re.escape(t) for t in sorted(
    {t for _, triggers, _ in _BUILTIN for t in triggers}, key=len, reverse=True)))
"""All triggers in one scan (the stdlib engine is fastest at plain literal alternations)."""


def _active(text: str, extra: Iterable[str | tuple[str, str]]) -> list[tuple[str, regex.Pattern]]:
    """The patterns worth running on `text`: built-ins whose trigger occurs, and every extra."""
    seen = set(_TRIGGERS.findall(text.lower()))
    found = [(kind, _compiled(pattern)) for kind, triggers, pattern in _BUILTIN if seen.intersection(triggers)]
    for item in extra:
        kind, pattern = ("custom", item) if isinstance(item, str) else item
        found.append((kind, _compiled(pattern)))
    return found


def _replacer(kind: str, allow: list[regex.Pattern]):
    placeholder = f"[REDACTED:{kind}]"

    def replace(match: regex.Match) -> str:
        has_group = "secret" in match.re.groupindex and match.start("secret") >= 0
        secret = match.group("secret") if has_group else match.group(0)
        if any(a.fullmatch(secret) for a in allow):
            return match.group(0)
        if not has_group:
            return placeholder
        whole, start, end = match.group(0), match.start("secret") - match.start(), match.end("secret") - match.start()
        return whole[:start] + placeholder + whole[end:]

    return replace


def redact(text: str, redact_extra: Iterable[str | tuple[str, str]] = (), redact_allow: Iterable[str] = ()) -> str:
    """Return `text` with every recognised secret replaced by `[REDACTED:<kind>]`, except the
    values that fully match a `redact_allow` pattern."""
    allowed = [_compiled(a) for a in redact_allow]
    for kind, pattern in _active(text, redact_extra):
        text = pattern.sub(_replacer(kind, allowed), text)
    return text


def covered_kinds() -> list[str]:
    """The kinds of secret the built-in patterns recognise (documentation and tests)."""
    return list(dict.fromkeys(kind for kind, _, _ in _BUILTIN))
