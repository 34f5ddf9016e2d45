"""Originals are redacted once per text and options, and remembered (`compress.stagekit.stage.redacted`)."""

from __future__ import annotations

from compress.stagekit.stage import PendingOriginals, redacted
from ground.redact import redact

SECRET = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def test_the_remembered_text_is_what_redact_gives_for_those_options():
    text = f"config:\n{SECRET}\nname = demo"
    assert redacted(text) == redact(text) and "wJalrXUtnFEMI" not in redacted(text)
    assert redacted(text) == redacted(text)  # the remembered copy
    allow = (r"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",)
    assert redacted(text, (), allow) == redact(text, (), allow)  # other options, another entry
    assert "wJalrXUtnFEMI" in redacted(text, (), allow) and "wJalrXUtnFEMI" not in redacted(text)


def test_pending_originals_store_the_redacted_text_under_its_key():
    pending = PendingOriginals()
    key = pending.put(f"x\n{SECRET}")
    assert "wJalrXUtnFEMI" not in pending.entries[key][0]
