"""Secret redaction: replace credentials in text with `[REDACTED:<kind>]` before it is stored.

The one place for the rules (`_BUILTIN`, `covered_kinds()`): private key blocks (PEM, OpenSSH,
PGP), JWTs, tokens recognised by their prefix (AWS, GitHub, GitLab, Anthropic, OpenAI, Stripe,
Slack, Google, npm, Hugging Face, SendGrid, PyPI, Docker), passwords in URLs (with or without a
user), `mysql -pPASS`, `--password X`, `Authorization: Basic|Bearer`, and assignments whose name
ends in a secret word (`DB_PASSWORD=`, `PGPASSWORD=`, `POSTGRES_PASSWORD:`, `"SecretAccessKey":`,
`NPM_TOKEN=`, `client_secret:` …; placeholders, booleans, `$VARS` and calls are left alone).

`redact(text, redact_extra=(), redact_allow=())`; `redact_extra` adds regexes, each either a
pattern string (kind `custom`) or a `(kind, pattern)` pair; a pattern with a group named
`secret` redacts only that group. `redact_allow` lists regexes for values that must stay (e.g. a
public test key): a match whose redacted part fully matches one of them is kept.
`secret_spans(text, …)` gives the same decisions as (start, end, kind) spans of `text`.

Redaction runs on the hot path (every original committed to CCR), so each built-in pattern
has literal triggers: it runs only when one of them occurs in the lower-cased text. Text with
no trigger costs one `lower()` and one scan for all triggers (see bench/secrets_cost.py).
Every pattern runs on the original text; overlapping matches merge into one placeholder
(the kind of the rule listed first).

Every built-in pattern is written so matching stays linear in the text length: possessive or
bounded quantifiers only, no nested unbounded repetition. Redaction is idempotent: the
placeholder itself never matches a pattern. This module imports nothing from the project, so
every engine can reuse it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
import re
from functools import lru_cache

import regex

_NOT_A_VALUE = (r"(?!\$|<|\{\{|%\(|/|~|\*{3}|\[REDACTED|(?:true|false|none|null|nil|undefined|string|str|bool"
                r"|required|optional|changeme|password|secret|token|xxx+|\.\.\.)(?![\w.-]))")
"""What follows `password=` and the like without being a secret: placeholders, `$VARS`,
template fields, paths, types, booleans, the word itself, an earlier redaction."""


_OVERLAPPING: set[str] = set()
"""Patterns whose matches may overlap (an assignment's value can hold the next one's name,
`credential: "SessionToken": "…"`): they are searched at every place, not after each match."""


def _assignment(names: str, min_len: int) -> str:
    """`NAME = value`, `NAME: value`, `"NAME": "value"`, `NAME := value` where NAME ends in one
    of `names` (any prefix: `DB_PASSWORD`, `PGPASSWORD`); the value is the `secret` group: a
    quoted string up to its quote (also inside JSON strings, `\\"NAME\\": \\"value\\"`) or,
    after an unquoted name, an unquoted run that is not a call or an index
    (`'password': continue` is code, not a dict entry)."""
    assign = r"[ \t]*+(?::=|=|:(?!:))[ \t]*+"
    quoted = (rf"(?:\"{_NOT_A_VALUE}(?P<secret>[^\"\n]{{{min_len},512}}+)\""
              rf"|'{_NOT_A_VALUE}(?P<secret>[^'\n]{{{min_len},512}}+)')")
    escaped = rf"\\{{1,7}}+\"{_NOT_A_VALUE}(?P<secret>[^\"\\\n]{{{min_len},512}}+)\\{{1,7}}+\""
    bare = rf"{_NOT_A_VALUE}(?P<secret>[^\s\"'`,;()\[\]{{}}<>$%]{{{min_len},512}}+)(?![(\[])"
    pattern = rf"(?i)(?:{names})(?:\\{{1,7}}+\"{assign}{escaped}|[\"']{assign}{quoted}|{assign}(?:{quoted}|{bare}))"
    _OVERLAPPING.add(pattern)
    return pattern


# (kind, literal triggers (lower case), pattern), specific rules first: when matches overlap,
# the first rule's kind names the merged placeholder. A trigger is any literal every match
# holds; they start with few distinct letters (p e a s g x h : k t b), which keeps the one
# scan for all of them fast on text that holds none.
# A group named `secret` is replaced alone.
_BUILTIN: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "private_key", ("private key",),
        r"-----BEGIN (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY(?: BLOCK)?-----(?:[^-]++|-(?!----END))*+"
        r"(?:-----END (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY(?: BLOCK)?-----)?+",
    ),
    (  # the rest of a key block whose head was cut away (a trimmed output keeps only its tail)
        "private_key", ("private key",),
        r"(?m)(?:^(?:[ \t]{0,12}+\d{1,9}+(?:\t|→|:[ \t]))?+[A-Za-z0-9+/=]{4,}+[ \t]*+\n)++"
        r"(?:[ \t]{0,12}+\d{1,9}+(?:\t|→|:[ \t]))?+-----END (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY(?: BLOCK)?-----",
    ),
    ("jwt", ("eyj",), r"\beyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+"),
    ("aws_access_key", ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa"),
     r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    ("aws_secret_key", ("secret",),
     r"(?i)aws_?secret_?(?:access_?)?key[\"']?+[ \t]*+[:=][ \t]*+[\"']?+(?P<secret>[A-Za-z0-9/+=]{40})\b"),
    ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}+|github_pat_[A-Za-z0-9_]{22,255}+)"),
    ("gitlab_token", ("glpat-", "gldt-", "glrt-"), r"\bgl(?:pat|dt|rt)-[A-Za-z0-9_-]{20,}+"),
    ("anthropic_key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_-]{20,}+"),
    ("openai_key", ("sk-",), r"\bsk-(?:proj-|svcacct-|admin-)?+[A-Za-z0-9_-]{20,}+"),
    ("stripe_key", ("k_live_", "k_test_", "hsec_"), r"\b(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}+|whsec_[A-Za-z0-9]{24,}+)"),
    ("slack_token", ("xox", "xapp-"), r"\b(?:xox[abposre]-[A-Za-z0-9-]{10,}+|xapp-[A-Za-z0-9-]{20,}+)"),
    ("slack_webhook", ("hooks.slack.com",), r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{10,}+"),
    ("google_api_key", ("aiza",), r"\bAIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
    ("google_oauth_token", ("a29.",), r"\bya29\.[A-Za-z0-9_-]{20,}+"),
    ("npm_token", ("pm_",), r"\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    ("huggingface_token", ("hf_",), r"\bhf_[A-Za-z0-9]{30,}+"),
    ("sendgrid_key", ("sg.",), r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"),
    ("pypi_token", ("pypi-",), r"\bpypi-AgE[A-Za-z0-9_-]{50,}+"),
    ("docker_token", ("kr_pat_",), r"\bdckr_pat_[A-Za-z0-9_-]{20,}+"),
    ("url_password", ("://",), r"\b[A-Za-z][A-Za-z0-9+.-]{0,30}+://[^\s:/@]{0,256}+:(?P<secret>[^\s@/\[]{1,256}+)@"),
    ("mysql_password", ("sql", "ariadb"),
     r"(?i)\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]{0,200}?[ \t]-p[\"']?+(?P<secret>[^\s\"'\[-][^\s\"']{0,127}+)"),
    ("cli_password", ("pass", "token", "secret", "key"),
     r"(?i)(?<![\w-])--(?:password|passwd|pass|token|secret|api-key)(?:=|[ \t]++)[\"']?+"
     r"(?P<secret>[^\s\"'$<{\[-][^\s\"']{2,255}+)"),
    ("basic_auth", ("basic",), r"(?i)authorization[\"']?+[ \t]*+[:=][ \t]*+[\"']?+basic[ \t]++(?P<secret>[A-Za-z0-9+/]{8,}+=*+)"),
    ("token", ("bearer",), r"(?i)bearer[ \t]++(?P<secret>[A-Za-z0-9_\-.~+/]{20,512}+=*+)"),
    ("password", ("pass", "pwd"), _assignment("password|passwd|pwd|passphrase|(?<=_)pass", 4)),
    ("api_key", ("key", "token", "secret"),
     _assignment("(?:api|access|auth|secret|client|private|master|account|service|signing|encryption)[_-]?"
                 "(?:key|token|secret)|apikey", 6)),
    ("token", ("token", "secret", "ential"), _assignment("token|secret|credentials?", 12)),
)


MULTI_LINE = frozenset({"private_key"})
"""Rules whose match spans lines; every other built-in matches within one line."""


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> regex.Pattern:
    return regex.compile(pattern, regex.V0)


_TRIGGERS = tuple(sorted({t for _, triggers, _ in _BUILTIN for t in triggers}, key=len, reverse=True))
_ANY_TRIGGER = re.compile("|".join(re.escape(t) for t in _TRIGGERS))
"""All triggers in one scan (the stdlib engine is fastest at plain literal alternations); it
reports one trigger per place, the longest, and resumes after it."""
_MAY_START_INSIDE = {t: sorted({u for i in range(len(t)) for u in _TRIGGERS
                                 if (u, i) != (t, 0) and (t[i:].startswith(u) or u.startswith(t[i:]))})
                     for t in _TRIGGERS}
"""For each trigger, the triggers that may start inside it ("sk-" in "sk-ant-", "key" in
"--api-key", or one running on past its end): the scan skips those places."""
DENSE = 64
"""A trigger found more often than this sends its rules over the whole text: one regex scan
is then cheaper than a window per line."""


def _trigger_hits(lower: str) -> dict[str, list[int] | None]:
    """For each trigger that occurs in `lower`: every place it occurs, or None when it occurs
    more than DENSE times. One scan finds which triggers occur (and how often); `str.find`
    gives the places of the sparse ones, those starting inside another included."""
    counts = Counter(_ANY_TRIGGER.findall(lower))
    for found in list(counts):
        for other in _MAY_START_INSIDE[found]:
            if other not in counts and other in lower:
                counts[other] = DENSE + 1  # rare: its rules scan the whole text
    hits: dict[str, list[int] | None] = {}
    for trigger, n in counts.items():
        if n > DENSE:
            hits[trigger] = None
            continue
        places, at = [], lower.find(trigger)
        while at >= 0:
            places.append(at)
            at = lower.find(trigger, at + 1)
        hits[trigger] = places
    return hits


def _lines_around(text: str, positions: list[int]) -> list[tuple[int, int]]:
    """The lines holding `positions` (sorted), adjacent lines joined: (start, end) spans."""
    spans: list[tuple[int, int]] = []
    for at in positions:
        if spans and at <= spans[-1][1]:
            continue
        start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        end = len(text) if end < 0 else end
        if spans and start <= spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


def _scans(text: str, extra: Iterable[str | tuple[str, str]]) -> list[tuple[str, regex.Pattern, list[tuple[int, int]]]]:
    """(kind, pattern, spans of `text` to search) for the patterns worth running: a built-in
    only where one of its triggers occurs (on those lines for one-line rules), every extra
    everywhere."""
    lower = text.lower()
    whole = [(0, len(text))]
    hits = _trigger_hits(lower)
    found = []
    for kind, triggers, pattern in _BUILTIN:
        places = [hits[t] for t in triggers if t in hits]
        if not places:
            continue
        # lower() may change the length of some characters: then places do not map back.
        if kind in MULTI_LINE or len(lower) != len(text) or any(p is None for p in places):
            spans = whole
        else:
            spans = _lines_around(text, sorted({p for of_trigger in places for p in of_trigger}))
        found.append((kind, _compiled(pattern), spans))
    for item in extra:
        kind, pattern = ("custom", item) if isinstance(item, str) else item
        found.append((kind, _compiled(pattern), whole))
    return found


def secret_spans(text: str, redact_extra: Iterable[str | tuple[str, str]] = (),
                 redact_allow: Iterable[str] = ()) -> list[tuple[int, int, str]]:
    """The (start, end, kind) spans of `text` that `redact` replaces, sorted, non-overlapping."""
    allowed = [_compiled(a) for a in redact_allow]
    found: list[tuple[int, int, int, str]] = []
    for rank, (kind, pattern, spans) in enumerate(_scans(text, redact_extra)):
        has_group = "secret" in pattern.groupindex
        overlapped = pattern.pattern in _OVERLAPPING
        for lo, hi in spans:
            for match in pattern.finditer(text, lo, hi, overlapped=overlapped):
                start, end = match.span("secret") if has_group and match.start("secret") >= 0 else match.span()
                if end > start and not any(a.fullmatch(text, start, end) for a in allowed):
                    found.append((start, end, rank, kind))
    found.sort()
    merged: list[tuple[int, int, str]] = []
    ranks: list[int] = []
    for start, end, rank, kind in found:
        if merged and start < merged[-1][1]:
            last_start, last_end, last_kind = merged[-1]
            if rank < ranks[-1]:
                last_kind, ranks[-1] = kind, rank
            merged[-1] = (last_start, max(last_end, end), last_kind)
        else:
            merged.append((start, end, kind))
            ranks.append(rank)
    return merged


def redact(text: str, redact_extra: Iterable[str | tuple[str, str]] = (), redact_allow: Iterable[str] = ()) -> str:
    """Return `text` with every recognised secret replaced by `[REDACTED:<kind>]`, except the
    values that fully match a `redact_allow` pattern."""
    return replace_spans(text, secret_spans(text, redact_extra, redact_allow))


def replace_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    """`text` with each (start, end, kind) span of `secret_spans` replaced by its placeholder."""
    if not spans:
        return text
    out, at = [], 0
    for start, end, kind in spans:
        out += (text[at:start], f"[REDACTED:{kind}]")
        at = end
    out.append(text[at:])
    return "".join(out)


def covered_kinds() -> list[str]:
    """The kinds of secret the built-in patterns recognise (documentation and tests)."""
    return list(dict.fromkeys(kind for kind, _, _ in _BUILTIN))
