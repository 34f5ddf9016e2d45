"""Real-looking secrets of every kind the redaction covers (none of them is live)."""

PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98v0sYt1kZ3QW9xHc2pV0zX8Zr1n5tQ9g0s8kD7aB3c4d\n"
       "Qm9zbG9uZ2Vyc2VjcmV0a2V5bWF0ZXJpYWxoZXJlMTIzNDU2Nzg5MA==\n-----END RSA PRIVATE KEY-----")

SECRETS = {
    "aws_access_key": "AKIAJ4Q7XKZ2L5WRT3NB",
    "aws_secret_key": "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",
    "github_token": "ghp_R8xK2mQ9vL4tW7nZ1pY6sD3fH5jB0cA2eG8u",
    "github_pat": "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789abcdefghijKLMNOPQRSTUV",
    "anthropic_key": "sk-ant-api03-Zq8vLm3KTeR8xK2mQ9vL4tW7nZ1pY6sD3fH5jB0cA2eG8uAA",
    "openai_key": "sk-proj-R8xK2mQ9vL4tW7nZ1pY6sD3fH5jB0cA2eG8uT3BlbkFJ",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
           "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "pem_private_key": PEM,
    "url_password": "hunter2Xy9",
    "slack_token": "xoxb-2048-1024-R8xK2mQ9vL4tW7nZ",
}


def leaky_text(repeat: int = 30) -> str:
    """A tool output (an env dump and config files) with every secret in its usual context."""
    lines = [
        f"AWS_ACCESS_KEY_ID={SECRETS['aws_access_key']}",
        f"aws_secret_access_key = {SECRETS['aws_secret_key']}",
        f"GITHUB_TOKEN={SECRETS['github_token']}",
        f"gh auth token: {SECRETS['github_pat']}",
        f"ANTHROPIC_API_KEY={SECRETS['anthropic_key']}",
        f"export OPENAI_API_KEY='{SECRETS['openai_key']}'",
        f"Authorization: Bearer {SECRETS['jwt']}",
        f"DATABASE_URL=postgres://admin:{SECRETS['url_password']}@db.internal:5432/app",
        f"SLACK_BOT_TOKEN={SECRETS['slack_token']}",
        SECRETS["pem_private_key"],
    ]
    filler = [f"line {i}: nothing secret here, just build output" for i in range(repeat)]
    return "\n".join(filler + lines + filler)


def leaks(text: str) -> list[str]:
    """The kinds of secret still readable in `text`."""
    return [kind for kind, secret in SECRETS.items() if secret in text]
