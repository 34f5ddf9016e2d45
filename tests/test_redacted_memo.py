"""Originals are redacted once per text and options, and remembered, with the key CCR stores
them under (`compress.stagekit.stage.stored_form`)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ccr.keys import make_key
from compress.stagekit.stage import PendingOriginals, stored_form
from ground.redact import redact

SECRET = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def test_the_remembered_text_is_what_redact_gives_for_those_options():
    text = f"config:\n{SECRET}\nname = demo"
    stored, key = stored_form(text)
    assert stored == redact(text) and "wJalrXUtnFEMI" not in stored and key == make_key(stored) != make_key(text)
    assert stored_form(text) == (stored, key)  # the remembered copy
    allow = (r"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",)
    assert stored_form(text, (), allow)[0] == redact(text, (), allow)  # other options, another entry
    assert "wJalrXUtnFEMI" in stored_form(text, (), allow)[0] and "wJalrXUtnFEMI" not in stored_form(text)[0]


def test_pending_originals_store_the_redacted_text_under_its_key():
    pending = PendingOriginals()
    key = pending.put(f"x\n{SECRET}")
    assert "wJalrXUtnFEMI" not in pending.entries[key][0] and key == make_key(pending.entries[key][0])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["x", "\n", " = ", "password", "aws_secret_access_key", "wJalrXUtnFEMI/K7MDENG",
                                 "/bPxRfiCYEXAMPLEKEY", "ghp_", "A" * 36, "é", "\ud800"]), max_size=12).map("".join),
       st.sampled_from([(), ("demo[0-9]+",)]), st.sampled_from([(), ("EXAMPLEKEY",)]))
def test_the_stored_form_is_the_redacted_text_and_its_key_whatever_the_memo_holds(text, extra, allow):
    expected = redact(text, extra, allow)
    assert stored_form(text, extra, allow) == (expected, make_key(expected))
    assert stored_form(text, extra, allow) == (expected, make_key(expected))  # remembered
    pending = PendingOriginals(redact_extra=extra, redact_allow=allow)
    form = pending.stored_form(text)
    assert pending.put(text, None, form) == PendingOriginals(redact_extra=extra, redact_allow=allow).put(text) == form[1]
    assert pending.entries[form[1]][0] == expected
