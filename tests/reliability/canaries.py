"""Canary secrets: one per way a credential shows up in an agent's tool output, each in its
usual context. None of them is live; every value is unique, so a byte search of a file finds
exactly the canaries that leaked into it.

`CANARIES` is the measured set of the detector comparison (bench/redact_detectors.py,
tests/test_redact_canaries.py) and what `tests/reliability/test_no_secret_at_rest.py` plants in
every input path.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass

_ALNUM = string.ascii_letters + string.digits


def _value(seed: int, size: int, alphabet: str = _ALNUM) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(size))


@dataclass(frozen=True)
class Canary:
    name: str
    secret: str
    """The part that must never be at rest (a byte search for it must fail)."""
    text: str
    """The secret in context, as a tool would print it."""


def _pgp_block(seed: int) -> str:
    body = "\n".join(_value(seed + i, 64, _ALNUM + "+/") for i in range(4))
    return f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n={_value(seed, 4)}\n-----END PGP PRIVATE KEY BLOCK-----"


def _pem_block(seed: int, label: str) -> str:
    body = "\n".join(_value(seed + i, 64, _ALNUM + "+/") for i in range(3))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


def _wrapped(token: str, width: int) -> str:
    """`token` folded into lines of `width` characters."""
    return "\n".join(token[i:i + width] for i in range(0, len(token), width))


def _placed(name: str, secret: str, template: str) -> str:
    """The canary's text: `secret` in `template`; the lines of a block value indented alike, and
    the two halves of a split token as two concatenated strings (`"…" + \\` and `"…"` below)."""
    if name == "yaml_block_password":
        secret = secret.replace("\n", "\n    ")
    elif name == "github_split_concat":
        secret = secret.replace("\n", '" + \\\n    "')
    return template.replace("{}", secret).replace("{{", "{").replace("}}", "}")


def _canaries() -> list[Canary]:
    v = _value
    aws_secret = v(1, 40, _ALNUM + "/+")
    session_token = "IQoJb3JpZ2luX2Vj" + v(2, 120, _ALNUM + "/+")
    pgp, pem, openssh = _pgp_block(3), _pem_block(10, "RSA PRIVATE KEY"), _pem_block(20, "OPENSSH PRIVATE KEY")
    items = [
        ("aws_access_key", "AKIA" + v(4, 16, string.ascii_uppercase + string.digits), "AWS_ACCESS_KEY_ID={}"),
        ("aws_secret_env", aws_secret, "aws_secret_access_key = {}"),
        ("aws_cli_secret", v(5, 40, _ALNUM + "/+"), '        "SecretAccessKey": "{}",'),
        ("aws_cli_session", session_token, '        "SessionToken": "{}",'),
        ("aws_cli_key_id", "ASIA" + v(6, 16, string.ascii_uppercase + string.digits), '        "AccessKeyId": "{}",'),
        ("github_classic", "ghp_" + v(7, 36), "GITHUB_TOKEN={}"),
        ("github_fine", "github_pat_11" + v(8, 80, _ALNUM + "_"), "gh auth token: {}"),
        ("anthropic", "sk-ant-api03-" + v(9, 80, _ALNUM + "_-"), "ANTHROPIC_API_KEY={}"),
        ("openai", "sk-proj-" + v(11, 48, _ALNUM + "_-"), "export OPENAI_API_KEY='{}'"),
        ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJ" + v(12, 40, _ALNUM + "_-") + "." + v(13, 43, _ALNUM + "_-"),
         "Authorization: Bearer {}"),
        ("slack", "xoxb-" + v(14, 12, string.digits) + "-" + v(15, 24), "SLACK_BOT_TOKEN={}"),
        ("slack_webhook", "https://hooks.slack.com/services/T" + v(16, 8) + "/B" + v(17, 8) + "/" + v(18, 24),
         "webhook: {}"),
        ("url_password", v(19, 14), "DATABASE_URL=postgres://admin:{}@db.internal:5432/app"),
        ("redis_no_user", v(21, 14), "REDIS_URL=redis://:{}@cache.internal:6379/0"),
        ("db_password", v(22, 14), "DB_PASSWORD={}"),
        ("postgres_password_yaml", v(23, 14), "      POSTGRES_PASSWORD: {}"),
        ("pgpassword", v(24, 14), "PGPASSWORD={} psql -h db -U app"),
        ("mysql_root_password", v(25, 14), "MYSQL_ROOT_PASSWORD={}"),
        ("stripe_live", "sk_live_" + v(26, 48), "STRIPE_SECRET_KEY={}"),
        ("stripe_restricted", "rk_live_" + v(27, 48), "stripe.api_key = '{}'"),
        ("npm_token", "npm_" + v(28, 36), "NPM_TOKEN={}"),
        ("npmrc", v(29, 36, string.hexdigits.lower()[:16] + "-"), "//registry.npmjs.org/:_authToken={}"),
        ("hf_token", "hf_" + v(30, 34), "HF_TOKEN={}"),
        ("google_api_key", "AIza" + v(31, 35, _ALNUM + "_-"), "const key = \"{}\";"),
        ("google_api_key_url", "AIza" + v(32, 35, _ALNUM + "_-"), "GET https://maps.googleapis.com/maps/api/geocode/json?key={}"),
        ("pgp_private_key", pgp, "{}"),
        ("pem_private_key", pem, "{}"),
        ("openssh_private_key", openssh, "$ cat ~/.ssh/id_ed25519\n{}"),
        ("mysql_p", v(33, 12), "$ mysql -u root -p{} shop < dump.sql"),
        ("cli_password", v(34, 12), "$ docker login registry.example.com -u deploy --password {}"),
        ("cli_password_eq", v(35, 12), "$ psql --password={} -h db"),
        ("gitlab", "glpat-" + v(36, 20, _ALNUM + "_-"), "GITLAB_TOKEN={}"),
        ("sendgrid", "SG." + v(37, 22, _ALNUM + "_-") + "." + v(38, 43, _ALNUM + "_-"), "sendgrid key {}"),
        ("django_secret", "django-insecure-" + v(39, 40, _ALNUM + "!@#^&*-_"), "SECRET_KEY = '{}'"),
        ("basic_auth", v(40, 32, _ALNUM + "+/"), "Authorization: Basic {}"),
        ("json_password", v(41, 16), '{{"user": "app", "password": "{}"}}'),
        ("client_secret", v(42, 32), "client_secret: {}"),
        ("session_secret", v(43, 32), "SESSION_SECRET={}"),
        ("pypi", "pypi-AgEIcHlwaS5vcmc" + v(44, 60, _ALNUM + "_-"), "password = {}"),
        ("docker_pat", "dckr_pat_" + v(45, 27, _ALNUM + "_-"), "echo {} | docker login -u me --password-stdin"),
        # command lines
        ("curl_user", v(46, 14), "$ curl -sf -u deploy:{} https://ci.example.com/api/json"),
        ("curl_user_quoted", v(47, 14), "curl --user 'admin:{}' -X POST https://jenkins.internal/job/x/build"),
        ("sshpass", v(48, 14), "$ sshpass -p '{}' ssh deploy@10.0.0.5 uptime"),
        ("docker_login_p", v(49, 14), "$ docker login -u ci -p {} registry.gitlab.com"),
        ("mongosh_p", v(50, 14), 'mongosh "mongodb://db:27017/app" -u admin -p {} --authenticationDatabase admin'),
        ("redis_cli_a", v(51, 14), "$ redis-cli -h cache.internal -a {} PING"),
        ("ldapsearch_w", v(52, 14), 'ldapsearch -x -D "cn=admin,dc=example,dc=org" -w {} -b dc=example,dc=org'),
        ("keytool_storepass", v(53, 14), "keytool -importkeystore -srckeystore in.p12 -srcstorepass {} -destkeystore out.jks"),
        ("openssl_pass", v(54, 14), "openssl pkcs12 -export -in cert.pem -inkey key.pem -passout pass:{} -out bundle.p12"),
        ("ssh_keygen_passphrase", v(98, 16), 'ssh-keygen -t ed25519 -N "{}" -f ~/.ssh/deploy_key'),
        ("gh_secret_set", v(99, 24), "$ gh secret set DEPLOY_TOKEN --body {} --repo acme/api"),
        ("aws_configure_set", v(100, 40, _ALNUM + "/+"), "$ aws configure set aws_secret_access_key {} --profile ci"),
        ("echo_with_token", v(101, 24), "$ echo {} | gh auth login --with-token"),
        ("wget_http_password", v(55, 14), "wget --http-user=me --http-password={} https://files.example.com/a.tgz"),
        # files and headers
        ("netrc", v(56, 14), "$ cat ~/.netrc\nmachine api.heroku.com\n  login me@example.com\n  password {}"),
        ("netrc_one_line", v(57, 14), "machine github.com login octocat password {}"),
        ("pgpass", v(58, 14), "$ cat ~/.pgpass\ndb.internal:5432:app:app_user:{}"),
        ("pgpass_echo", v(59, 14), 'echo "*:*:*:postgres:{}" > ~/.pgpass && chmod 600 ~/.pgpass'),
        ("cookie", v(60, 32), "> Cookie: sessionid={}; csrftoken=Qm9vb3Rz"),
        ("set_cookie", v(61, 32), "< Set-Cookie: _app_session={}; path=/; secure; HttpOnly; SameSite=Lax"),
        ("authorization_token", v(62, 40), "Authorization: Token {}"),
        ("kubeconfig_client_key", "LS0tLS1CRUdJTiBSU0Eg" + v(63, 80, _ALNUM + "+/"), "    client-key-data: {}"),
        ("docker_config_auth", v(64, 40, _ALNUM + "+/"), '{{"auths": {{"ghcr.io": {{"auth": "{}"}}}}}}'),
        ("npmrc_auth", v(65, 32, _ALNUM + "+/"), "_auth = {}"),
        ("php_define", v(66, 24), "define( 'DB_PASSWORD', '{}' );"),
        ("wpa_psk", v(67, 20), '    psk="{}"'),
        ("rails_secret_key_base", v(68, 64, string.hexdigits.lower()[:16]), "SECRET_KEY_BASE={}"),
        ("json_escaped_password", v(69, 14), '{{"v": "password = \\"{}\\""}}'),
        ("terraform_in_json", v(70, 14) + ".atlasv1." + v(71, 67, _ALNUM + "_-"),
         '{{"stdout": "credentials \\"app.terraform.io\\" {{\\n  token = \\"{}\\"\\n}}"}}'),
        ("azure_sas", v(72, 32, _ALNUM) + "%2B" + v(73, 8) + "%3D",
         "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&sp=r&se=2026-01-01T00:00:00Z&sig={}"),
        ("azure_client_secret", v(74, 3) + "8Q~" + v(75, 34, _ALNUM + "_~.-"), "Client secret value: {}"),
        # keys and tokens recognised by their shape
        ("putty_key", "\n".join(v(80 + i, 64, _ALNUM + "+/") for i in range(2)),
         "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: ci\nPublic-Lines: 1\n"
         "AAAAC3NzaC1lZDI1NTE5AAAAIO\nPrivate-Lines: 2\n{}\nPrivate-MAC: 0a1b2c3d"),
        ("age_key", "AGE-SECRET-KEY-1" + v(83, 58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"), "# created: 2026-01-01\n{}"),
        ("shopify", "shpat_" + v(84, 32, string.hexdigits.lower()[:16]), "X-Shopify-Session: {}"),
        ("telegram", v(85, 10, string.digits[1:]) + ":AA" + v(86, 33, _ALNUM + "_-"),
         "GET https://api.telegram.org/bot{}/getMe"),
        ("vault", "hvs." + v(87, 90, _ALNUM + "_-"), "token                  {}"),
        ("sentry_dsn", v(88, 32, string.hexdigits.lower()[:16]), "dsn: https://{}@o450000.ingest.sentry.io/5500000"),
        ("digitalocean", "dop_v1_" + v(89, 64, string.hexdigits.lower()[:16]), "doctl auth init -t {}"),
        ("groq", "gsk_" + v(90, 52), "client = Groq(key={})"),
        ("atlassian", "ATATT3" + v(91, 180, _ALNUM + "_-"), "jira token: {}"),
        ("mailchimp", v(92, 32, string.hexdigits.lower()[:16]) + "-us21", "mailchimp: {}"),
        ("google_refresh", "1//0" + v(93, 60, _ALNUM + "_-"), "refresh: {}"),
        ("gcp_oauth_client_secret", "GOCSPX-" + v(94, 28, _ALNUM + "_-"), "oauth client: {}"),
        ("discord_webhook", "https://discord.com/api/webhooks/" + v(95, 18, string.digits) + "/" + v(96, 68, _ALNUM + "_-"),
         "notify: {}"),
        ("gitlab_runner", "glrt-" + v(97, 20, _ALNUM + "_-"), "runner token {}"),
        # shapes that hide a secret's shape: wrapped, split, in a block, after a full-width colon
        ("jwt_wrapped",
         _wrapped("eyJhbGciOiJSUzI1NiJ9.eyJ" + v(102, 120, _ALNUM + "_-") + "." + v(103, 86, _ALNUM + "_-"), 64),
         "$ kubectl get secret sa-token -o jsonpath='{{.data.token}}' | base64 -d | fold -w 64\n{}"),
        ("cjk_db_password", v(104, 16), "数据库密码：{}，请勿外传"),
        ("fullwidth_colon_password", v(105, 16), "admin password：{}"),
        ("yaml_block_password", v(106, 20) + "\n" + v(107, 20), "db:\n  password: |\n    {}\n  user: app"),
        ("github_split_concat", "ghp_" + v(108, 18) + "\n" + v(109, 18),
         'GH_TOKEN = "{}"'),
    ]
    body = _pem_block(76, "PRIVATE KEY").split("\n")[1:-1]
    service_account = json.dumps({"type": "service_account", "private_key_id": "k1", "private_key":
                                  "\n".join(["-----BEGIN PRIVATE KEY-----", *body, "-----END PRIVATE KEY-----", ""])})
    return [Canary(name, secret, _placed(name, secret, template)) for name, secret, template in items] + [
        Canary("gcp_service_account", "\n".join(body), service_account)]


CANARIES: list[Canary] = _canaries()


def canary_text(filler: int = 5) -> str:
    """Every canary in context, between lines of ordinary build output."""
    lines = [f"step {i}: compiled module_{i}.py in 0.{i}s" for i in range(filler)]
    return "\n".join(lines + [c.text for c in CANARIES] + lines)


def leaked(data: bytes | str) -> list[str]:
    """Names of the canaries whose secret occurs in `data` (bytes are searched as UTF-8 and,
    for SQLite and JSON files, in their escaped forms too)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    found = []
    for c in CANARIES:
        forms = {c.secret.encode(), c.secret.replace("/", "\\/").encode(), c.secret.replace("\n", "\\n").encode()}
        forms |= {line.encode() for line in c.secret.splitlines() if len(line) >= 12}
        if any(f in data for f in forms):
            found.append(c.name)
    return found
