"""memory_store refuses oversized text with a clear error and never stores the same text twice."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory import api


@pytest.fixture(autouse=True)
def fresh_process_cache():
    api._indexes.clear()
    yield
    api._indexes.clear()


def test_oversized_text_is_refused_with_the_limit_named(cfg):
    with pytest.raises(api.BadInput, match=r"entry is 200,000 characters; the limit is 2,000"):
        api.store(cfg, "note", "x" * 200_000)
    assert not (cfg.project_home / api.MEMORY_FILE).exists()
    assert api.store(cfg, "note", "y" * cfg.max_entry_chars).text == "y" * cfg.max_entry_chars


def test_identical_text_returns_the_existing_entry(cfg):
    first = api.store(cfg, "decision", "Use SQLite WAL for the CCR store")
    again = api.store(cfg, "decision", "  use sqlite   WAL for the\nCCR store  ")
    assert again == first
    assert len(api.list_entries(cfg, "project")) == 1


def test_text_already_in_notes_is_not_stored_again_in_memory(cfg):
    noted = api.store(cfg, "decision", "Pin numpy below 2.0", notes=True)
    assert api.store(cfg, "decision", "Pin numpy below 2.0") == noted
    assert not (cfg.project_home / api.MEMORY_FILE).exists()


def test_different_text_is_stored(cfg):
    a = api.store(cfg, "fact", "The retry limit for queue worker 1 is 3 attempts")
    b = api.store(cfg, "fact", "The retry limit for queue worker 2 is 6 attempts")
    assert a.id != b.id and len(api.list_entries(cfg, "project")) == 2


_words = st.lists(st.text(alphabet="abcXYZ019数据库é", min_size=1, max_size=8), min_size=1, max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_words, st.lists(st.sampled_from([" ", "  ", "\n", "\t "]), min_size=8, max_size=8), st.booleans())
def test_any_respacing_or_recasing_of_stored_text_is_the_same_entry(cfg, words, gaps, upper):
    text = " ".join(words)
    variant = "".join(w + g for w, g in zip(words, gaps))
    variant = variant.upper() if upper else variant
    first = api.store(cfg, "note", text)
    assert api.store(cfg, "note", variant).id == first.id
    entries = [e for e in api.list_entries(cfg, "project") if api.same_text(e.text, text)]
    assert len(entries) == 1
