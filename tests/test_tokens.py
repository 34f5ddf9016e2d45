"""Token counting: estimator invariants, accuracy against exact o200k_base, corpus check."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compress.token_counters import ESTIMATOR, estimate_tokens, exact_counter, get_counter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

EXACT = exact_counter()
needs_exact = pytest.mark.skipif(EXACT is None, reason="no exact o200k_base backend (pip install bpe-openai)")

_WORDS = ("the of and to in is that for it with as was on be by this are from or have an not which but "
          "function request server cache value token returns error file config update memory test "
          "because should would between important different following without").split()


def _chinese_vocabulary() -> tuple[list[str], list[int]]:
    """Frequent all-Han words with their frequencies from jieba's dictionary (a runtime dependency)."""
    import jieba

    words, weights = [], []
    with open(Path(jieba.__file__).with_name("dict.txt"), encoding="utf-8") as handle:
        for line in handle:
            word, freq, *_ = line.split()
            if int(freq) >= 20000 and all("\u4e00" <= ch <= "\u9fff" for ch in word):
                words.append(word)
                weights.append(int(freq))
    return words, weights


_ZH_WORDS, _ZH_WEIGHTS = _chinese_vocabulary()


def _english(rng: random.Random, words: int) -> str:
    sentences = []
    while words > 0:
        n = min(words, rng.randint(5, 18))
        words -= n
        sentence = " ".join(rng.choice(_WORDS) for _ in range(n))
        sentences.append(sentence[0].upper() + sentence[1:] + rng.choice(".,;!?"))
    return " ".join(sentences)


def _chinese(rng: random.Random, words: int) -> str:
    """Word-frequency-weighted Chinese (random characters would tokenize unlike real text)."""
    out = []
    for i, word in enumerate(rng.choices(_ZH_WORDS, weights=_ZH_WEIGHTS, k=words)):
        out.append(word)
        if i % rng.randint(6, 14) == 0:
            out.append(rng.choice("，。、"))
    return "".join(out)


def _code(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        name = rng.choice(_WORDS) + "_" + rng.choice(_WORDS)
        indent = "    " * rng.randint(0, 3)
        out.append(rng.choice([
            f"{indent}def {name}(self, {rng.choice(_WORDS)}: int = {rng.randint(0, 999)}) -> str:",
            f"{indent}{name} = {rng.choice(_WORDS)}.get(\"{rng.choice(_WORDS)}\", {rng.randint(0, 99)})",
            f"{indent}if {name} is None or len({name}) > {rng.randint(1, 64)}:",
            f"{indent}return {{\"{rng.choice(_WORDS)}\": {name}, \"line\": {i}}}",
        ]))
    return "\n".join(out)


def _json(rng: random.Random, items: int) -> str:
    records = [{"id": rng.randint(1, 10**6), "name": _english(rng, 3), "tags": rng.sample(_WORDS, 3),
                "score": round(rng.random() * 100, 2), "ok": rng.random() < 0.5} for _ in range(items)]
    return json.dumps(records, indent=rng.choice([None, 2]))


GENERATORS = {"english": (_english, 400), "chinese": (_chinese, 800), "code": (_code, 80), "json": (_json, 40)}


# ---------------------------------------------------------------- invariants of the estimator

def test_empty_is_zero_and_counter_names():
    assert estimate_tokens("") == 0
    assert ESTIMATOR.count("") == 0
    assert ESTIMATOR.name == "estimate"
    assert get_counter(prefer_exact=False) is ESTIMATOR


@given(st.text())
@settings(max_examples=300)
def test_estimate_never_raises_and_is_positive_for_nonempty(text):
    n = estimate_tokens(text)
    assert isinstance(n, int)
    assert n >= (1 if text else 0)


def test_lone_surrogates_are_counted():
    assert estimate_tokens("\ud800") >= 1
    assert estimate_tokens("abc \udfff def") >= estimate_tokens("abc def")


@given(st.sampled_from(sorted(GENERATORS)), st.sampled_from(sorted(GENERATORS)), st.integers(0, 10**6))
@settings(max_examples=40, deadline=None)
def test_roughly_additive_on_big_chunks(kind_a, kind_b, seed):
    rng = random.Random(seed)
    a = GENERATORS[kind_a][0](rng, GENERATORS[kind_a][1])
    b = GENERATORS[kind_b][0](rng, GENERATORS[kind_b][1])
    joined, parts = estimate_tokens(a + b), estimate_tokens(a) + estimate_tokens(b)
    assert abs(joined - parts) <= 0.01 * parts + 3


@given(st.text(min_size=20, max_size=300), st.integers(2, 6))
@settings(max_examples=100)
def test_grows_with_repetition(text, times):
    assert estimate_tokens(text * times) >= estimate_tokens(text) * times * 0.9 - 3


def test_deterministic():
    text = _code(random.Random(7), 200) + _chinese(random.Random(7), 500)
    assert len({estimate_tokens(text) for _ in range(3)}) == 1


# ---------------------------------------------------------------- accuracy against exact o200k

@needs_exact
@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_estimate_close_to_o200k_on_generated_text(kind):
    make, size = GENERATORS[kind]
    rng = random.Random(f"tokens-{kind}")
    texts = [make(rng, size) for _ in range(20)]
    exact = sum(EXACT.count(t) for t in texts)
    estimated = sum(estimate_tokens(t) for t in texts)
    assert abs(estimated / exact - 1) <= 0.15, (kind, estimated, exact)


@needs_exact
def test_exact_counter_known_values_and_fallback_names():
    assert EXACT.name in {"o200k_base (bpe-openai)", "o200k_base (tiktoken)"}
    assert EXACT.count("") == 0
    assert EXACT.count("hello world") == 2
    assert EXACT.count("<|endoftext|>") > 1  # special tokens are counted as plain text
    assert EXACT.count("a\ud800b") >= 2  # lone surrogate: no exception
    assert get_counter(prefer_exact=True) is EXACT


def test_get_counter_falls_back_to_estimator(monkeypatch, tmp_path):
    import compress.token_counters as tokens

    monkeypatch.setattr(tokens, "_bpe_openai_counter", lambda: None)
    monkeypatch.setattr(tokens, "_exact", {})
    assert tokens.get_counter(prefer_exact=True, tiktoken_cache=tmp_path) is tokens.ESTIMATOR


# ---------------------------------------------------------------- real transcripts

@needs_exact
def test_estimate_within_ten_percent_on_corpus_categories(corpus):
    from token_corpus import file_samples, transcript_files

    root = corpus
    totals: dict[str, list[int]] = {}
    for path in transcript_files(root)[::3]:
        for category, text in file_samples(path):
            pair = totals.setdefault(category, [0, 0])
            pair[0] += EXACT.count(text)
            pair[1] += estimate_tokens(text)
    for category in ("english", "code", "logs", "json", "chinese"):
        if category in totals:
            exact, estimated = totals[category]
            assert abs(estimated / exact - 1) <= 0.10, (category, estimated, exact)


def test_corpus_sampler_reads_a_schema_whose_type_is_a_list(tmp_path):
    """Tool definitions in real sessions carry JSON schemas with `"type": ["string", "null"]`."""
    from token_corpus import file_samples

    schema = {"type": "object", "properties": {"env": {"type": ["string", "null"], "description": "x" * 400}}}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"type": "session_meta", "tools": [{"name": "t", "input_schema": schema}]}) + "\n")
    assert list(file_samples(path))
