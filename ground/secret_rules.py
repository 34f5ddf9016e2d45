"""The built-in secret rules of `ground.redact`: what is redacted, under which kind, and how
each rule is searched. The one place for them (`RULES`).

A rule is (kind, triggers, pattern, search). `triggers` are lower-case literals every match
holds: the rule runs only where one of them occurs. A group named `secret` is replaced alone.
When matches overlap, the first rule's kind names the merged placeholder, so specific rules
come first. `search` says how the pattern is run (`ground.redact` implements each):

- "plain": non-overlapping matches, left to right (`finditer`).
- "assignment": a pattern built by `_assignment`; matches may nest (an assignment's value can
  hold the next one's name, `credential: "SessionToken": "…"`), found without rescanning a
  value more than a bounded number of times.
- "key_tail": the pattern finds `-----END … PRIVATE KEY-----` lines; the key lines above each
  one (the rest of a block whose head was cut away) are walked back line by line.

What must hold for every pattern (tests/test_redact_linear.py, bench/redact_speed.py): matching
is linear in the text. Each unbounded repetition is possessive (`++`, `*+`, `{n,}+`) and is
either the last thing a match needs, or every place a failing attempt can start is at most a
bounded distance from the last one (a `\\b` or lookbehind that no character of the run
passes, or a bounded repetition). Lazy scans (`{0,200}?`) are bounded. No pattern matches its
own placeholder `[REDACTED:kind]`, so redaction is idempotent.
"""

from __future__ import annotations

from typing import NamedTuple

_NOT_A_VALUE = (r"(?!\$|<|\{\{|%\(|/|~|\*{3}|\[REDACTED|(?:true|false|none|null|nil|undefined|string|str|bool"
                r"|required|optional|changeme|password|secret|token|xxx+|\.\.\.)(?![\w.-]))")
"""What follows `password=` and the like without being a secret: placeholders, `$VARS`,
template fields, paths, types, booleans, the word itself, an earlier redaction."""

NAME_REACH = 40
"""More than the longest name an assignment rule knows plus seven backslashes and `:=`: a
name nested in a bare value can start a match reaching past that value only this close to
its end (the assignment search resumes there)."""


class Rule(NamedTuple):
    kind: str
    triggers: tuple[str, ...]
    pattern: str
    search: str = "plain"


def _assignment(names: str, min_len: int) -> str:
    """`NAME = value`, `NAME: value`, `"NAME": "value"`, `NAME := value` where NAME ends in one
    of `names` (any prefix: `DB_PASSWORD`, `PGPASSWORD`); the value is the `secret` group: a
    quoted string up to its quote (also inside JSON strings, `\\"NAME\\": \\"value\\"` and
    `NAME = \\"value\\"`) or, after an unquoted name, a bare run (group `bare`) that is not a
    call or an index (`'password': continue` is code, not a dict entry): group `call` is set
    when `(` or `[` follows the run, and the search drops that match. Group `more` is set
    when a quote or an assignment follows the match, or blanks follow a value ending in `=`
    or `:` (a name nested in the value may then reach past it). Names (with their
    separator) are at most NAME_REACH - 9 characters."""
    assign = r"[ \t]*+(?::=|=|:(?!:))[ \t]*+"
    quoted = (rf"(?:\"{_NOT_A_VALUE}(?P<secret>[^\"\n]{{{min_len},}}+)\""
              rf"|'{_NOT_A_VALUE}(?P<secret>[^'\n]{{{min_len},}}+)')")
    escaped = rf"\\{{1,7}}+\"{_NOT_A_VALUE}(?P<secret>[^\"\\\n]{{{min_len},}}+)\\{{1,7}}+\""
    bare = rf"(?P<bare>{_NOT_A_VALUE}(?P<secret>[^\s\"'`,;()\[\]{{}}<>$%]{{{min_len},}}+))(?P<call>(?=[(\[]))?"
    return (rf"(?i)(?:{names})(?:\\{{1,7}}+\"{assign}{escaped}|[\"']{assign}{quoted}"
            rf"|{assign}(?:{quoted}|{escaped}|{bare}))(?P<more>(?=[ \t]*+[\"'=:])|(?<=[=:])(?=[ \t]))?")


def _after_command(commands: str, rest: str) -> str:
    """`rest` on the same line after one of the words `commands`, at most 200 characters
    later (`mysql -u root -pSECRET`). The window stops at the next of those words, so each
    character is in one window at most (`mysql mysql mysql …` stays linear); a flag after
    the second word is found from there. Nor does it cross a placeholder: a key block
    redacted across lines joins them, and what follows must not become a flag's value on
    the next pass (redaction stays idempotent)."""
    word = rf"\b(?:{commands})\b"
    return rf"(?i){word}(?:(?!{word}|\[REDACTED:)[^\n]){{0,200}}?{rest}"


_KEY_LABEL = r"-----END (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY(?: BLOCK)?-----"
_LINE_NUMBER = r"(?:[ \t]{0,12}+\d{1,9}+(?:\t|→|:[ \t]))?+"
"""A line number as `cat -n`, `nl` or a Read tool prints it (`  12→`, `12\t`, `12: `)."""
KEY_LINE = rf"{_LINE_NUMBER}[A-Za-z0-9+/=]{{4,}}+[ \t]*+"
"""A line of a key block's body (the key_tail search walks back over these)."""

RULES: tuple[Rule, ...] = (
    Rule("private_key", ("private key",),
         r"-----BEGIN (?:[A-Z0-9]{1,20}+ ){0,4}PRIVATE KEY(?: BLOCK)?-----(?:[^-]++|-(?!----END))*+"
         rf"(?:{_KEY_LABEL})?+"),
    # the rest of a key block whose head was cut away (a trimmed output keeps only its tail)
    Rule("private_key", ("private key",), rf"(?m)^{_LINE_NUMBER}{_KEY_LABEL}", "key_tail"),
    Rule("jwt", ("eyj",), r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+"),
    Rule("aws_access_key", ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa"),
         r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    Rule("aws_secret_key", ("secret",),
         r"(?i)aws_?secret_?(?:access_?)?key[\"']?+[ \t]*+[:=][ \t]*+[\"']?+(?P<secret>[A-Za-z0-9/+=]{40})\b"),
    Rule("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
         r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}+|github_pat_[A-Za-z0-9_]{22,255}+)"),
    Rule("gitlab_token", ("glpat-", "gldt-", "glrt-"), r"\bgl(?:pat|dt|rt)-[A-Za-z0-9_-]{20,}+"),
    Rule("anthropic_key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_-]{20,}+"),
    Rule("openai_key", ("sk-",), r"\bsk-(?:proj-|svcacct-|admin-)?+[A-Za-z0-9_-]{20,}+"),
    Rule("stripe_key", ("k_live_", "k_test_", "hsec_"),
         r"\b(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}+|whsec_[A-Za-z0-9]{24,}+)"),
    Rule("slack_token", ("xox", "xapp-"), r"\b(?:xox[abposre]-[A-Za-z0-9-]{10,}+|xapp-[A-Za-z0-9-]{20,}+)"),
    Rule("slack_webhook", ("hooks.slack.com",), r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{10,}+"),
    Rule("google_api_key", ("aiza",), r"\bAIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
    Rule("google_oauth_token", ("a29.",), r"\bya29\.[A-Za-z0-9_-]{20,}+"),
    Rule("npm_token", ("pm_",), r"\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    Rule("huggingface_token", ("hf_",), r"\bhf_[A-Za-z0-9]{30,}+"),
    Rule("sendgrid_key", ("sg.",), r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"),
    Rule("pypi_token", ("pypi-",), r"\bpypi-AgE[A-Za-z0-9_-]{50,}+"),
    Rule("docker_token", ("kr_pat_",), r"\bdckr_pat_[A-Za-z0-9_-]{20,}+"),
    Rule("url_password", ("://",), r"\b[A-Za-z][A-Za-z0-9+.-]{0,30}+://[^\s:/@]{0,256}+:(?P<secret>[^\s@/\[]{1,256}+)@"),
    Rule("mysql_password", ("sql", "ariadb"),
         _after_command("mysql|mysqldump|mysqladmin|mariadb", r"[ \t]-p[\"']?+(?P<secret>[^\s\"'\[-][^\s\"']{0,127}+)")),
    Rule("cli_password", ("pass", "token", "secret", "key"),
         r"(?i)(?<![\w-])--(?:password|passwd|pass|token|secret|api-key)(?:=|[ \t]++)[\"']?+"
         r"(?P<secret>[^\s\"'$<{\[-][^\s\"']{2,255}+)"),
    Rule("basic_auth", ("basic",),
         r"(?i)authorization[\"']?+[ \t]*+[:=][ \t]*+[\"']?+basic[ \t]++(?P<secret>[A-Za-z0-9+/]{8,}+=*+)"),
    Rule("token", ("bearer",), r"(?i)bearer[ \t]++(?P<secret>[A-Za-z0-9_\-.~+/]{20,512}+=*+)"),
    Rule("password", ("pass", "pwd"), _assignment("password|passwd|pwd|passphrase|(?<=_)pass", 4), "assignment"),
    Rule("api_key", ("key", "token", "secret"),
         _assignment("(?<=(?:api|access|auth|secret|client|private|master|account|service|signing|encryption)[_-]?)"
                     "(?:key|token|secret)", 6), "assignment"),
    Rule("token", ("token", "secret", "ential"), _assignment("token|secret|credentials?", 12), "assignment"),
)

MULTI_LINE = frozenset({"private_key"})
"""Kinds whose match spans lines; every other rule matches within one line."""
