"""ground.redact: every supported secret kind disappears, ordinary text and code survive."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ground.redact import redact

SECRETS = {
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "github_token": "ghp_" + "a1B2c3D4e5" * 4,
    "anthropic_key": "sk-ant-api03-" + "x" * 30,
    "openai_key": "sk-proj-" + "Ab3" * 10,
    "slack_token": "xoxb-1234567890-abcdefghijk",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_token_kinds_are_replaced(kind):
    out = redact(f"before {SECRETS[kind]} after")
    assert SECRETS[kind] not in out
    assert out == f"before [REDACTED:{kind}] after"


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        ("postgres://admin:hunter2pass@db.local/app", "hunter2pass", "url_password"),
        ("password=correcthorse", "correcthorse", "password"),
        ('{"password": "s3cr3t-value"}', "s3cr3t-value", "password"),
        ("api_key: 'abcdef123456'", "abcdef123456", "api_key"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "aws_secret_key"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123", "abcdefghijklmnop", "token"),
    ],
)
def test_assigned_values_are_replaced_but_names_kept(text, secret, kind):
    out = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out


def test_pem_private_key_block_is_removed_whole():
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc==\n-----END RSA PRIVATE KEY-----"
    assert redact(f"key:\n{key}\nnext line") == "key:\n[REDACTED:private_key]\nnext line"
    # A truncated key (no END line) is still redacted to the end of the text.
    assert "MIIE" not in redact("-----BEGIN OPENSSH PRIVATE KEY-----\nMIIEow")


@pytest.mark.parametrize(
    "code",
    [
        "def login(password: str) -> bool:",
        'api_key = os.environ["API_KEY"]',
        "password = get_password()",
        "Use memory_store to save a decision; tokens are counted with o200k.",
    ],
)

def test_code_and_prose_are_left_alone(code):
    assert redact(code) == code


def test_redact_extra_with_and_without_kind():
    text = "ticket INTERNAL-12345 and host secret-host-7"
    out = redact(text, redact_extra=[r"INTERNAL-\d+", ("host", r"secret-host-(?P<secret>\d+)")])
    assert out == "ticket [REDACTED:custom] and host secret-host-[REDACTED:host]"


@given(st.text(max_size=300), st.sampled_from(sorted(SECRETS.values())))
def test_redaction_is_idempotent_and_removes_secret(prefix, secret):
    text = prefix + " " + secret + " tail"
    once = redact(text)
    assert redact(once) == once
    assert secret not in once


def test_the_tail_of_a_key_block_whose_head_was_cut_is_removed_too():
    """A trimmed output may keep only the end of a key block (its BEGIN line cut away)."""
    tail = "step 299 ok\nEqV8ib8HDy88YtDtXbiufMdI8X2Y\nk+Heas8VOcI+z0my==\n=pLIi\n-----END PGP PRIVATE KEY BLOCK-----\nnext"
    assert redact(tail) == "step 299 ok\n[REDACTED:private_key]\nnext"
    numbered = "  12→QUJDRA==\n  13→-----END RSA PRIVATE KEY-----"
    assert "QUJD" not in redact(numbered)


def test_a_quoted_value_inside_a_json_string_is_redacted():
    """The red team's shape: an assignment with a quoted value inside a JSON tool result."""
    import json

    text = json.dumps({"v": 'password = "RtEaMpw1234567"'})
    assert redact(text) == json.dumps({"v": 'password = "[REDACTED:password]"'})
    terraform = json.dumps({"stdout": 'token = "nXz41Vq.atlasv1.' + "Qw3" * 25 + '"'})
    assert "atlasv1" not in redact(terraform)
