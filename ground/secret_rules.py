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
- "block": the pattern finds a YAML block scalar's head (`password: |`, `token: >-`); the lines
  below it that are indented deeper (its value) are walked forward line by line.

After every rule, a secret that ends a quoted string continued by concatenation
(`"ghp_…" + \\`, a line break, `"…"`; `CONCATENATED`) also covers the strings that continue it.

What must hold for every pattern (tests/test_redact_linear.py, bench/redact_speed.py): matching
is linear in the text. Each unbounded repetition is possessive (`++`, `*+`, `{n,}+`) and is
either the last thing a match needs, or every place a failing attempt can start is at most a
bounded distance from the last one (a `\\b` or lookbehind that no character of the run
passes, or a bounded repetition). Lazy scans (`{0,200}?`) are bounded. No pattern matches its
own placeholder `[REDACTED:kind]`, so redaction is idempotent.
"""

from __future__ import annotations

from typing import NamedTuple

_NOT_A_VALUE = (r"(?!\$|<|\{\{|%\(|/|~|\*{3}|\[REDACTED|[|>][1-9+-]{0,2}+(?:[ \t\\]|$)"
                r"|(?:true|false|none|null|nil|undefined|string|str|bool"
                r"|required|optional|changeme|password|secret|token|xxx+|\.\.\.)(?![\w.-]))")
"""What follows `password=` and the like without being a secret: placeholders, `$VARS`,
template fields, paths, types, booleans, the word itself, an earlier redaction, a YAML block
scalar's indicator (its value is on the lines below: the "block" rules)."""

NAME_REACH = 40
"""More than the longest name an assignment rule knows plus seven backslashes and `:=`: a
name nested in a bare value can start a match reaching past that value only this close to
its end (the assignment search resumes there)."""


_U = r"\\{1,7}+u"
"""A `\\u` escape as JSON with ASCII output writes a character (one or more levels deep)."""
PASSWORD_NAMES = (r"password|passwd|pwd|passphrase|(?<=_)pass|(?<![A-Za-z])psk|密码|口令"
                  rf"|{_U}5bc6{_U}7801|{_U}53e3{_U}4ee4")
"""What a password's name ends in (`DB_PASSWORD`, `PGPASSWORD`, `数据库密码`, also `\\u`-escaped)."""
PASSWORD_TRIGGERS = ("pass", "pwd", "psk", "密码", "口令", "u5bc6", "u53e3")
KEY_NAMES = ("(?<=(?:api|access|auth|secret|client|private|master|account|service|signing|encryption)[_-]?)"
             "(?:key|token|secret)(?:[_-]base)?+")
"""What an API key's name ends in (`API_KEY`, `client_secret`, `SECRET_KEY_BASE`)."""


class Rule(NamedTuple):
    kind: str
    triggers: tuple[str, ...]
    pattern: str
    search: str = "plain"


def _assignment(names: str, min_len: int) -> str:
    """`NAME = value`, `NAME: value`, `"NAME": "value"`, `NAME := value` where NAME ends in one
    of `names` (any prefix: `DB_PASSWORD`, `PGPASSWORD`); the value is the `secret` group: a
    quoted string up to its quote (also inside JSON strings, `\\"NAME\\": \\"value\\"` and
    `NAME = \\"value\\"`), read in a lookahead so that the match ends where the value starts
    (the next search reads the value again: a name nested in it may start a match), or, after
    an unquoted name, a bare run that is not a call or an index (`'password':
    continue` is code, not a dict entry): group `call` is set when `(` or `[` follows the run,
    and the search drops that match; group `more` when a quote or an assignment follows it, or
    blanks follow a run ending in `=` or `:` (a name nested in the run may then reach past
    it). Names (with their separator) are at most NAME_REACH - 9 characters."""
    blank = rf"(?:[ \t\u3000]|{_U}3000)*+"
    assign = rf"{blank}(?::=|=|:(?!:)|：|＝|{_U}ff1[ad]){blank}"
    quoted = (rf"(?:\"{_NOT_A_VALUE}(?=(?P<secret>[^\"\n]{{{min_len},}}+)\")"
              rf"|'{_NOT_A_VALUE}(?=(?P<secret>[^'\n]{{{min_len},}}+)'))")
    escaped = rf"\\{{1,7}}+\"{_NOT_A_VALUE}(?=(?P<secret>[^\"\\\n]{{{min_len},}}+)\\{{1,7}}+\")"
    bare = (rf"{_NOT_A_VALUE}(?P<secret>[^\s\"'`,;()\[\]{{}}<>$%，。；、（）]{{{min_len},}}+)(?P<call>(?=[(\[]))?"
            r"(?P<more>(?=[ \t]*+[\"'=:])|(?<=[=:])(?=[ \t]))?")
    return (rf"(?i)(?:{names})(?:\\{{1,7}}+\"{assign}{escaped}|[\"']{assign}{quoted}"
            rf"|{assign}(?:{quoted}|{escaped}|{bare}))")


_FLAG_VALUE = r"(?:\\{0,7}+[\"'])?+(?P<secret>[^\s\"'$<{\[\\-](?:[^\s\"'\\]|\\(?![\"'\\])){0,255}+)"
"""A command-line flag's value, quoted or not (also JSON-escaped, `\\"…\\"`); not a `$VAR`, a
template or another flag."""
_DASH_P = rf"[ \t]-p(?:[ \t]++|=)?+{_FLAG_VALUE}"


_NL = r"(?:\r?\n|(?:\\{1,7}+r)?+\\{1,7}+n)"
"""A line break, also as a JSON string writes it (one or more levels deep)."""
_LINE_START = r"(?:^|(?<=\\n|[\"']))"
"""The start of a line (in `(?m)`), also after a JSON-escaped line break or an opening quote."""
_B = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrt]))"
"""Where a token may start: no word character before it, or an escaped `\\n`, `\\r` or `\\t`
(a token at the start of a line of text inside a JSON string)."""
_SCHEME = rf"://(?<={_B}[A-Za-z][A-Za-z0-9+.-]{{0,30}}://)"
"""`scheme://`, found from its `://` (a literal the engine finds fast) with the scheme checked
behind it."""
_B_JWT = r"(?:(?<![A-Za-z0-9_-])|(?<=\\[nrt]))"
_LINE_CHAR = r"(?:[^\n\\]|\\(?![\\rn]))"
"""A character of a line that does not start a line break, escaped or not."""
_JWT_CHAR = r"[A-Za-z0-9_-]"
_WRAPPED_LINE = r"(?=[A-Za-z0-9_.-]++(?![^\s\"'`\\])|[A-Za-z0-9_.-]{16}(?<=[0-9][^\n]{0,15}))"
_WRAP_ANY = rf"(?:{_NL}[ \t]{{0,16}}+{_WRAPPED_LINE})"
_WRAP = rf"(?:{_NL}[ \t]{{0,16}}+(?!eyJ){_WRAPPED_LINE})"
"""A line break inside a token wrapped to a width (`fold`, a terminal, a JSON string's `\\n`):
the next line, past its indentation, holds token characters alone (and the token's dots), or
opens with 16 of them one of which is a digit (the token's last line, with text after it). Not
a line that opens with `eyJ` (there a match may start: a failed one then reads each line once),
except right after a part's dot (`_WRAP_ANY`)."""
_JWT_RUN = rf"{_JWT_CHAR}++(?:{_WRAP}{_JWT_CHAR}++){{0,64}}+"
"""A part of a token, over at most 64 wrapped lines (so a failed match reads a bounded number)."""
_JWT_PART = rf"{_JWT_CHAR}{{8}}{_JWT_CHAR}*+(?:{_WRAP}{_JWT_CHAR}++){{0,64}}+"
_JWT_DOT = rf"{_WRAP}?+\.{_WRAP_ANY}?+"


CONCATENATED = (r"\\{0,7}+[\"'][ \t]{0,8}(?:\+[ \t]{0,8}(?:\\{1,8}[ \t]{0,8})?|\\{1,8}[ \t]{0,8}(?=" + _NL + r"))"
                rf"(?:{_NL}[ \t]{{0,64}}(?:\+[ \t]{{0,8}})?)?\\{{0,7}}+[\"'](?P<more>[A-Za-z0-9_\-+/=.~]{{2,256}}+)"
                r"(?=\\{0,7}+[\"'])")
"""What continues a quoted string a secret ends: its closing quote, `+` or a `\\` line
continuation (either way across a line break or not), and the next string's opening quote; the
next string's content (`more`) is the rest of the secret. Also JSON-escaped (`\\"`, `\\n`)."""

_NETRC_VALUE = r"(?!\[REDACTED:)(?P<secret>(?:[^\s\\\"'`]|\\(?![\\nr\"])){1,256}+)"
"""A value up to a blank, a quote or an escaped line break."""


def _after_command(commands: str, rest: str) -> str:
    """`rest` on the same line after one of the words `commands` (also glued to what comes
    before it, a line joined to the previous one), at most 200 characters later
    (`mysql -u root -pSECRET`). The window stops at the next of those words, so each
    character is in one window at most (`mysql mysql mysql …` stays linear); a flag after
    the second word is found from there. Nor does it cross a placeholder: a key block
    redacted across lines joins them, and what follows must not become a flag's value on
    the next pass (redaction stays idempotent)."""
    word = rf"(?:{commands})\b"
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
    Rule("jwt", ("eyj",),
         rf"{_B_JWT}eyJ{_JWT_PART}{_JWT_DOT}eyJ{_JWT_PART}{_JWT_DOT}(?=(?:{_JWT_CHAR}|{_WRAP}){{8}}){_JWT_RUN}"),
    Rule("aws_access_key", ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa"),
         _B + r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    Rule("aws_secret_key", ("secret",),
         r"(?i)aws_?secret_?(?:access_?)?key[\"']?+[ \t]*+[:=][ \t]*+[\"']?+(?P<secret>[A-Za-z0-9/+=]{40})\b"),
    Rule("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
         _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}+|github_pat_[A-Za-z0-9_]{22,255}+)"),
    # its first part, in a string another continues (`"ghp_…" + "…"`: the rest joins it, `CONCATENATED`)
    Rule("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
         _B + r"(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{8,255}+(?=\\{0,7}+[\"'][ \t]*+(?:\+|\\\r?\n|\\{3,}+n))"),
    Rule("gitlab_token", ("glpat-", "gldt-", "glrt-", "glft-", "glsoat-", "glptt-", "glcbt-", "gloas-", "glimt-",
                          "glagent-", "gr1348941"),
         _B + r"(?:gl(?:pat|dt|rt|ft|soat|ptt|cbt|oas|imt|agent)-|GR1348941)[A-Za-z0-9_-]{20,}+"),
    Rule("anthropic_key", ("sk-ant-",), _B + r"sk-ant-[A-Za-z0-9_-]{20,}+"),
    Rule("openai_key", ("sk-",), _B + r"sk-(?:proj-|svcacct-|admin-)?+[A-Za-z0-9_-]{20,}+"),
    Rule("stripe_key", ("k_live_", "k_test_", "hsec_"),
         _B + r"(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}+|whsec_[A-Za-z0-9]{24,}+)"),
    Rule("slack_token", ("xox", "xapp-"), _B + r"(?:xox[abposre]-[A-Za-z0-9-]{10,}+|xapp-[A-Za-z0-9-]{20,}+)"),
    Rule("slack_webhook", ("hooks.slack.com",), r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{10,}+"),
    Rule("google_api_key", ("aiza",), _B + r"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
    Rule("google_oauth_token", ("a29.",), _B + r"ya29\.[A-Za-z0-9_-]{20,}+"),
    Rule("npm_token", ("pm_",), _B + r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    Rule("huggingface_token", ("hf_",), _B + r"hf_[A-Za-z0-9]{30,}+"),
    Rule("sendgrid_key", ("sg.",), _B + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"),
    Rule("pypi_token", ("pypi-",), _B + r"pypi-AgE[A-Za-z0-9_-]{50,}+"),
    Rule("docker_token", ("kr_pat_",), _B + r"dckr_pat_[A-Za-z0-9_-]{20,}+"),
    Rule("age_secret_key", ("age-secret-key-1",), _B + r"AGE-SECRET-KEY-1[0-9A-Z]{58}\b"),
    Rule("shopify_token", ("shpat_", "shpss_", "shpca_", "shppa_"), _B + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b"),
    # detect-secrets' TelegramBotTokenDetector pattern, with the "AA" every bot token's secret
    # starts with (a one-character trigger ":" would send every line of code through it)
    Rule("telegram_token", (":aa",), r"(?<![0-9])\d{8,10}+:AA[0-9A-Za-z_-]{33}(?![0-9A-Za-z_-])"),
    Rule("vault_token", ("hvs.", "hvb.", "hvr."), _B + r"hv[sbr]\.[A-Za-z0-9_-]{24,}+"),
    Rule("sentry_dsn", ("://",), rf"{_SCHEME}(?P<secret>[0-9a-f]{{32}}+(?::[0-9a-f]{{32}}+)?+)@"),
    Rule("azure_sas", ("sig=",), r"[?&;]sig=(?P<secret>[A-Za-z0-9%+/=]{20,}+)"),
    Rule("azure_client_secret", ("q~",), r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"),
    Rule("digitalocean_token", ("dop_v1_", "doo_v1_", "dor_v1_"), _B + r"do[por]_v1_[a-f0-9]{64}\b"),
    Rule("ai_api_key", ("gsk_", "r8_", "pplx-", "xai-", "lsv2_", "tvly-"),
         _B + r"(?:gsk_[A-Za-z0-9]{48,}+|r8_[A-Za-z0-9]{37}\b|pplx-[A-Za-z0-9]{48}\b|xai-[A-Za-z0-9]{80,}+"
         r"|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b|tvly-[A-Za-z0-9-]{20,}+)"),
    # SaaS tokens recognised by their prefix, one rule each (one alternation of them all was slow)
    Rule("saas_token", ("lin_api_",), _B + r"lin_api_[A-Za-z0-9]{40}\b"),
    Rule("saas_token", ("ntn_",), _B + r"ntn_[A-Za-z0-9]{40,}+"),
    Rule("saas_token", ("secret_",), _B + r"secret_[A-Za-z0-9]{43}\b"),
    Rule("saas_token", ("pmak-",), _B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    Rule("saas_token", ("nrak-",), _B + r"NRAK-[A-Z0-9]{27}\b"),
    Rule("saas_token", ("glsa_",), _B + r"glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}\b"),
    Rule("saas_token", ("glc_",), _B + r"glc_[A-Za-z0-9+/]{32,}+=*+"),
    Rule("saas_token", ("dp.",), _B + r"dp\.(?:st|pt|sa|ct|scim|audit)\.[A-Za-z0-9_.-]{40,}+"),
    Rule("saas_token", ("pul-",), _B + r"pul-[a-f0-9]{40}\b"),
    Rule("saas_token", (".atlasv1.",), _B + r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}+"),
    Rule("saas_token", ("sbp_",), _B + r"sbp_[a-f0-9]{40}\b"),
    Rule("saas_token", ("sb_secret_",), _B + r"sb_secret_[A-Za-z0-9_-]{20,}+"),
    Rule("saas_token", ("nfp_",), _B + r"nfp_[A-Za-z0-9]{36}\b"),
    Rule("saas_token", ("rnd_",), _B + r"rnd_[A-Za-z0-9]{32}\b"),
    Rule("saas_token", ("sntrys_",), _B + r"sntrys_[A-Za-z0-9+/=_]{50,}+"),
    Rule("saas_token", ("sntryu_",), _B + r"sntryu_[a-f0-9]{64}\b"),
    Rule("saas_token", ("atbb",), _B + r"ATBB[A-Za-z0-9_=.-]{32,}+"),
    Rule("saas_token", ("atatt3",), _B + r"ATATT3[A-Za-z0-9_=-]{50,}+"),
    Rule("saas_token", ("rubygems_",), _B + r"rubygems_[a-f0-9]{48}\b"),
    Rule("saas_token", ("oy2",), _B + r"oy2[a-z0-9]{43}\b"),
    Rule("saas_token", ("dapi",), _B + r"dapi[a-f0-9]{32}(?:-\d)?+\b"),
    Rule("saas_token", ("gocspx-",), _B + r"GOCSPX-[A-Za-z0-9_-]{28}(?![A-Za-z0-9_-])"),
    Rule("saas_token", ("sk.eyj",), _B + r"sk\.eyJ[A-Za-z0-9_-]{50,}+\.[A-Za-z0-9_-]{20,}+"),
    Rule("saas_token", ("sq0",), _B + r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}+"),
    Rule("saas_token", ("hrku-",), _B + r"HRKU-[A-Za-z0-9_-]{60,}+"),
    Rule("saas_token", ("1//0",), r"(?<![A-Za-z0-9_-])1//0[A-Za-z0-9_-]{40,}+"),  # Google refresh token
    Rule("saas_token", ("-us",), _B + r"[0-9a-f]{32}-us\d{1,2}\b"),  # Mailchimp (detect-secrets' pattern)
    Rule("webhook_url", ("discord",),
         r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{1,20}+/[A-Za-z0-9_-]{40,}+"),
    Rule("private_key", ("private-lines",),  # PuTTY .ppk
         rf"(?m){_LINE_START}Private-Lines:[ \t]*+\d{{1,4}}+[ \t]*+{_NL}"
         rf"(?P<secret>[A-Za-z0-9+/=]++(?![-:])(?:{_NL}[A-Za-z0-9+/=]++(?![-:]))*+)"),
    Rule("kubeconfig_key", ("client-key-data",),
         r"(?i)client-key-data[\"']?+[ \t]*+:[ \t]*+[\"']?+(?P<secret>[A-Za-z0-9+/]{20,}+=*+)"),
    Rule("docker_auth", ('"auth',), r"\"auth\\{0,7}+\"[ \t]*+:[ \t]*+\\{0,7}+\"(?P<secret>[A-Za-z0-9+/]{12,}+=*+)\\{0,7}+\""),
    Rule("npm_token", ("_auth",),
         r"_auth[ \t]*+=[ \t]*+(?P<secret>[A-Za-z0-9+/]{8,}+=*+)(?![\w(.\[])"),
    Rule("config_secret", ("define(",),
         r"(?i)define\([ \t]*+[\"'][A-Za-z0-9_]{1,60}+(?<=password|secret|key|token|salt)[\"'][ \t]*+,[ \t]*+"
         r"[\"'](?!\[REDACTED:)(?P<secret>[^\"'\n]{4,}+)[\"']"),
    Rule("url_password", ("://",), rf"{_SCHEME}(?!\[REDACTED:)[^\s:/@]{{0,256}}+:(?P<secret>[^\s@/\[]{{1,256}}+)@"),
    Rule("mysql_password", ("sql", "ariadb"),
         _after_command("mysql|mysqldump|mysqladmin|mariadb", r"[ \t]-p[\"']?+(?P<secret>[^\s\"'\[-][^\s\"']{0,127}+)")),
    Rule("cli_password", ("pass", "token", "secret", "key"),
         r"(?i)(?<![\w-])--(?:[a-z]{1,20}+-)?(?:password|passwd|pass|token|secret|api-key)(?:=|[ \t]++)[\"']?+"
         r"(?P<secret>[^\s\"'$<{\[-][^\s\"']{2,255}+)"),
    Rule("cli_password", ("curl",), _after_command(
        "curl", r"[ \t](?:-u|--user)(?:[ \t]++|=)?+(?:\"[^\"\n:]{0,256}+:(?P<secret>(?!\$|\[REDACTED:)[^\"\n]{1,256}+)\""
                r"|'[^'\n:]{0,256}+:(?P<secret>(?!\$|\[REDACTED:)[^'\n]{1,256}+)'|[^\s\"':]{0,256}+:(?P<secret>(?!\$|\[REDACTED:)[^\s\"']{1,256}+))")),
    Rule("cli_password", ("sshpass",), _after_command("sshpass", _DASH_P)),
    Rule("cli_password", ("mongo",), _after_command("mongo(?:sh|dump|restore|import|export)?+", _DASH_P)),
    Rule("cli_password", ("login",), _after_command(
        r"login(?<=(?:docker|podman|nerdctl|buildah|skopeo|oras|helm[ \t]{1,8}registry|az)[ \t]{1,8}login)", _DASH_P)),
    Rule("cli_password", ("ssh-keygen",), _after_command("ssh-keygen", rf"[ \t]-[NP][ \t]++{_FLAG_VALUE}")),
    Rule("cli_password", ("secret set",),
         _after_command(r"gh[ \t]++secret[ \t]++set", rf"[ \t](?:--body|-b)(?:[ \t]++|=){_FLAG_VALUE}")),
    Rule("cli_password", ("configure",),
         r"(?i)aws[ \t]++configure[ \t]++set[ \t]++(?:[\w.-]{0,40}+\.)?+(?:aws_secret_access_key|aws_session_token)[ \t]++"
         + _FLAG_VALUE),
    Rule("cli_password", ("stdin", "with-token"),  # echo TOKEN | docker login --password-stdin, gh auth login --with-token
         r"(?i)echo[ \t]++[\"']?+(?P<secret>[^\s\"'$<{|\[-][^\s\"'|]{3,255}+)[\"']?+[ \t]*+\|(?:(?!echo)[^\n;&|]){0,200}?"
         r"--(?:password-stdin|with-token)"),
    Rule("cli_password", ("redis-cli",), _after_command("redis-cli", rf"[ \t]-a[ \t]++{_FLAG_VALUE}")),
    Rule("cli_password", ("ldap",), _after_command(r"ldap[a-z]{3,12}+", rf"[ \t]-w[ \t]++{_FLAG_VALUE}")),
    Rule("cli_password", ("storepass", "keypass", "pass:"),
         rf"(?i)(?<![\w-])-(?:(?:src|dest)?(?:storepass|keypass)[ \t]++{_FLAG_VALUE}"
         r"|pass(?:in|out)?+[ \t]++[\"']?+pass:(?!\[REDACTED:)(?P<secret>[^\s\"']{1,256}+))"),
    Rule("netrc_password", ("pass",),
         r"(?i)(?:machine[ \t]++[^\s\\]{1,256}+[ \t]++(?:(?:login|account|port)[ \t]++[^\s\\]{1,256}+[ \t]++){0,3}+"
         r"|default[ \t]++(?:(?:login|account|port)[ \t]++[^\s\\]{1,256}+[ \t]++){1,3}+)"
         rf"password[ \t]++{_NETRC_VALUE}"),
    Rule("netrc_password", ("pass",),
         rf"(?im)password(?=[ \t])"
         rf"(?<={_LINE_START}[ \t]*+(?:machine|login|account|default)\b{_LINE_CHAR}{{0,256}}{_NL}[ \t]*+password)"
         rf"[ \t]++{_NETRC_VALUE}"),
    # host:port:database:user:password on the usual ports or any (`*`); the match starts at the
    # port (a literal the engine finds fast), the host is checked behind it (not a MAC address;
    # after a line start, a quote or a blank: a tool call shown on one line joins the lines)
    Rule("pgpass_password", (":5432:", ":5433:", ":6432:", ":*:"),
         rf"(?m):(?:543[23]|6432|\*):(?<=(?:{_LINE_START}|(?<=[\s`]))(?![0-9A-Fa-f]{{2}}(?::[0-9A-Fa-f]{{2}}){{5}}(?![^\s\"']))"
         r"(?!\d++:)(?:\*|[A-Za-z0-9._-]{1,253}):(?:543[23]|6432|\*):)"
         r"[^\s:\\\[]{1,256}+:[^\s:\\\[]{1,256}+:(?!\[REDACTED:)(?P<secret>(?:[^\s\\\"'`]|\\(?![\\nr\"])){1,256}+)"),
    Rule("cookie", ("cookie",),
         r"(?i)(?<![\w-])(?:set-)?cookie[\"']?+[ \t]*+[:=][ \t]*+\\{0,7}+[\"']?+"
         r"(?P<secret>(?![$<{\[])[^\s;,=:\"'\\]{1,256}+=[^\n\"'\\]++)"),
    Rule("token", ("authorization",),
         r"(?i)authorization[\"']?+[ \t]*+[:=][ \t]*+[\"']?+(?:token|apikey|api-key|sso-key|bot|key|ssws|splunk|dsn)"
         r"[ \t]++(?P<secret>(?!\$)[A-Za-z0-9_\-.~+/:=]{12,}+)"),
    Rule("basic_auth", ("basic",),
         r"(?i)authorization[\"']?+[ \t]*+[:=][ \t]*+[\"']?+basic[ \t]++(?P<secret>[A-Za-z0-9+/]{8,}+=*+)"),
    Rule("token", ("bearer",), r"(?i)bearer[ \t]++(?P<secret>[A-Za-z0-9_\-.~+/]{20,512}+=*+)"),
    Rule("password", PASSWORD_TRIGGERS, _assignment(PASSWORD_NAMES, 4), "assignment"),
    Rule("api_key", ("key", "token", "secret"), _assignment(KEY_NAMES, 6), "assignment"),
    Rule("token", ("token", "secret", "ential"), _assignment("token|secret|credentials?", 12), "assignment"),
)

def _block_head(names: str) -> str:
    """The head line of a YAML block scalar whose key ends in one of `names` (`DB_PASSWORD: |`,
    `"token": >-`, with its indentation and chomping indicators and a comment). The match starts
    at the colon (what the trigger found) and the name is checked behind it: a search then
    tries only the colons followed by `|` or `>`."""
    indicator = r":(?: {0,2}|\t)[|>]"
    return (rf"(?im){indicator}(?<=(?:{names})[\"']?+[ \t]*+{indicator})(?:[1-9][+-]?+|[+-][1-9]?+)?+[ \t]*+"
            rf"(?:#[^\n\\]*+)?+(?:\r?$|(?=(?:\\{{1,7}}+r)?+\\{{1,7}}+n))")


_BLOCK_TRIGGERS = tuple(f":{blank}{indicator}" for blank in ("", " ", "  ", "\t") for indicator in "|>")
"""Every block head holds one: its colon, at most two spaces or a tab, and `|` or `>` (rarer
than the names, so the rules run on far fewer lines)."""
BLOCKS: tuple[Rule, ...] = (
    Rule("password", _BLOCK_TRIGGERS, _block_head(PASSWORD_NAMES), "block"),
    Rule("token", _BLOCK_TRIGGERS, _block_head(f"{KEY_NAMES}|token|secret|credentials?"), "block"),
)
"""YAML block scalars holding a secret (`password: |` and the lines below it)."""
RULES = RULES + BLOCKS

MULTI_LINE = frozenset({"private_key", "netrc_password", "jwt"})
"""Kinds whose match spans lines; every other rule matches within one line."""
