"""The memory tokenizer: compounds, identifiers, stemming, stopwords, width, CJK chars/bigrams/jieba words."""

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memory_helpers import JIEBA_CACHE, REPO

from memory.tokenize import Tokenizer

TOK = Tokenizer(JIEBA_CACHE)


def terms(text: str) -> set[str]:
    return set(TOK.tokens(text))


def test_identifiers_are_kept_whole_and_split():
    tokens = Tokenizer().tokens("memory_store getUserName HTTPServer")
    assert tokens[:3] == ["memorystor", "memori", "store"]  # the whole first, then parts and pairs
    assert {"getusernam", "get", "user", "name", "usernam", "httpserver", "http", "server"} <= set(tokens)
    assert terms("memory_store") == terms("memoryStore") == terms("MemoryStore")


# Each probe: (as stored, as queried, the term they must share).
PROBES = [
    ("base64Encode()", "base64 encode", {"base64", "encod"}),  # split at digit -> capital and camelCase
    ("node:18-alpine", "node18", {"node18"}),  # a pair joined across the connector
    ("100 ms", "100ms", {"100", "ms"}),  # letter/digit split of the query
    ("UTF-8", "utf8", {"utf8", "utf", "8"}),  # split parts and the joined form
    ("OAuth2", "oauth", {"oauth"}),
    ("precommit", "pre-commit", {"precommit"}),
    ("ＡＰＩ", "API", {"api"}),  # NFKC width normalisation
    ("C++", "C++", {"c++"}),
    ("C#", "C#", {"c#"}),
]


@pytest.mark.parametrize(("stored", "query", "shared"), PROBES)
def test_probe_shares_its_terms(stored, query, shared):
    assert shared <= terms(stored) & terms(query)


def test_split_parts_and_joined_form_are_both_indexed():
    assert TOK.tokens("utf-8") == ["utf8", "utf", "8"]
    assert TOK.tokens("node:18-alpine") == ["node18alpine", "node", "18", "alpin", "node18", "18alpine"]  # stems: letters only
    assert TOK.tokens("OAuth2") == ["oauth2", "auth", "2", "oauth", "auth2"]
    assert terms("base64Encode") == {"base64encode", "base", "64", "encod", "base64", "64encode"}


def test_code_languages_are_terms_of_their_own():
    assert TOK.tokens("C++ C# F# g++ notepad++") == ["c++", "c#", "f#", "g++", "notepad++"]
    assert TOK.tokens("C") == [] and terms("C++17") == {"c++", "17"}
    assert terms("issue#12") == {"issu", "12"} and terms("a+b") == set()  # no suffix after a word or before a letter


def test_numbers_are_not_joined_and_stopwords_not_paired():
    assert terms("2025-06-01") == {"2025", "06", "01"}
    assert terms("3.11") == {"3", "11"}
    assert "stateof" not in terms("state-of-the-art") and "stateoftheart" in terms("state-of-the-art")


def test_query_weights_favour_the_word_as_written():
    weights = TOK.query_terms("OAuth e0382", fragment_weight=0.5)
    assert weights == {"oauth": 1.0, "auth": 0.5, "e0382": 1.0, "0382": 0.5}
    assert TOK.query_terms("cache cache 中文") == {"cach": 2.0, "中": 1.0, "文": 1.0, "中文": 1.0}


# Code-shaped text: letters of several scripts and widths, digits, connectors, C++/C# marks.
_ALPHABET = list("abcXYZeE0189-_.:/@'+# ()") + ["é", "ß", "α", "Ω", "中", "文", "テ", "한", "Ａ", "ｚ", "１", "\u3000"]
code_text = st.lists(st.sampled_from(_ALPHABET + ["Http", "URL", "v2", "OAuth", "base64", "C++", "C#", "utf-8"]), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(code_text)
def test_tokenizer_is_deterministic_and_query_terms_are_the_same_terms(text):
    tokens = TOK.tokens(text)
    assert Tokenizer(JIEBA_CACHE).tokens(text) == tokens == TOK.tokens(text)
    assert all(t and not t.isspace() and " " not in t for t in tokens)
    weights = TOK.query_terms(text)
    assert set(weights) == set(tokens) and sum(weights.values()) == len(tokens)


@settings(max_examples=300, deadline=None)
@given(code_text, code_text, code_text)
def test_a_query_word_gets_the_same_terms_inside_any_document(before, word, after):
    # query-document symmetry: whatever surrounds a space-delimited word, its terms are there
    assert terms(word) <= terms(f"{before} {word} {after}")


_FULL = {chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)}


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=30))
def test_full_width_text_gets_the_same_terms(text):
    assert TOK.tokens("".join(_FULL.get(c, c) for c in text)) == TOK.tokens(text)


def test_inflections_meet_and_stopwords_vanish():
    tok = Tokenizer()
    assert tok.tokens("the memories were running") == tok.tokens("memory run")
    assert tok.tokens("the and of a") == []


def test_cjk_runs_give_chars_bigrams_and_long_jieba_words():
    tokens = Tokenizer(JIEBA_CACHE).tokens("北京大学")
    assert tokens[:4] == ["北", "京", "大", "学"]
    assert {"北京", "京大", "大学", "北京大学"} <= set(tokens)


def test_kana_and_hangul_use_characters_and_bigrams():
    assert Tokenizer().tokens("テスト 한국") == ["テ", "ス", "ト", "テス", "スト", "한", "국", "한국"]


def test_ablations_bigrams_only_and_jieba_only():
    assert Tokenizer(JIEBA_CACHE, words=False, chars=False).tokens("北京大学") == ["北京", "京大", "大学"]
    assert Tokenizer(JIEBA_CACHE, bigrams=False, chars=False).tokens("北京大学") == ["北京大学"]


def test_jieba_is_imported_only_for_chinese_text():
    code = (
        "import sys; from memory.tokenize import Tokenizer; t = Tokenizer(None); "
        "t.tokens('plain english テスト'); print('jieba' in sys.modules); t.tokens('中文'); print('jieba' in sys.modules); "
        "t.tokens('中文分词'); print('jieba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.split() == ["False", "False", "True"]  # two characters have no word of three
    assert out.stderr == ""  # jieba's "Building prefix dict" chatter is silenced


def test_jieba_dictionary_cache_is_written_and_reused(tmp_path):
    first = Tokenizer(tmp_path).tokens("我们在北京大学学习")
    assert list(tmp_path.glob("jieba-dict-*.bin"))
    assert Tokenizer(tmp_path).tokens("我们在北京大学学习") == first


def test_the_cached_dictionary_cuts_as_jieba_does_and_a_corrupt_block_is_rebuilt(tmp_path):
    from memory import pieces
    from memory.cjk import Segmenter, _import_jieba

    jieba = _import_jieba()
    sentences = ["我们在北京大学学习", "战国无双的游戏角色", "数据库连接池的大小是二十",
                 "小明硕士毕业于中国科学院计算所，后在日本京都大学深造"]
    expected = [list(jieba.cut(s, HMM=True)) for s in sentences]
    Segmenter(tmp_path).cut("写缓存")
    [cache] = tmp_path.glob("jieba-dict-*.bin")
    assert [Segmenter(tmp_path).cut(s) for s in sentences] == expected  # each from a cold cache
    _, blocks, _ = pieces.read(cache, b"CTXMJBA2")
    data = bytearray(cache.read_bytes())
    for block in blocks.values():  # every block corrupt
        data[block._start] ^= 0xFF
    cache.write_bytes(bytes(data))
    assert [Segmenter(tmp_path).cut(s) for s in sentences] == expected
    assert Segmenter(tmp_path).cut(sentences[0]) == expected[0]  # from the cache built again


# --- the stdlib patterns (ASCII, PLAIN_CJK, characters of no word) against the Unicode ones ---

def _every_character() -> str:
    return "".join(chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF)


def test_every_plain_character_is_what_the_unicode_patterns_take_it_for():
    """Each code point the stdlib patterns read: a PLAIN_CJK letter is a CJK letter for `regex`
    (Han exactly when PLAIN_HAN has it); a character that separates words is no letter, number,
    mark, CJK character or connector."""
    import regex

    from memory.tokenize import _CJK, PLAIN_CJK, PLAIN_HAN, separates_words

    def chars(ranges) -> str:
        return "".join(chr(c) for low, high in ranges for c in range(ord(low), ord(high) + 1))

    plain_cjk = chars(PLAIN_CJK)
    assert set(plain_cjk) == set(regex.findall(rf"[[{_CJK}]&&\p{{L}}]", plain_cjk, flags=regex.V1))
    assert set(chars(PLAIN_HAN)) == set(regex.findall(r"\p{Han}", plain_cjk))
    letters = set(plain_cjk)
    separators = "".join(ch for ch in _every_character() if ch not in letters and separates_words(ch))
    assert len(separators) > 5000
    assert regex.findall(rf"[\p{{L}}\p{{N}}\p{{M}}{_CJK}\u2019]", separators, flags=regex.V1) == []


# Text a person writes in English or Chinese, and characters only the Unicode patterns read.
_PLAIN_PIECES = ["api", "Http", "OAuth2", "v2", "C++", "C#", "utf-8", "x", "E0382", "node:18", "don’t", " ", "\n",
                 "北京", "大学", "中文", "数据库", "的", "テスト", "한국어", "々", "，", "。", "、", "「", "」", "！", "？",
                 "—", "…", "“", "”", "·", "€", "→", "\u3000", "\u200b", "Ａ", "１", "#", "+", "-", "_", ".", "/"]
_OTHER_PIECES = ["é", "ß", "Ω", "café", "α", "\u0301", "١", "〇", "⺀", "㈀", "ｶ", "\U0002ebf0", "\ue000", "\u0378"]
plain_text = st.lists(st.sampled_from(_PLAIN_PIECES), max_size=14).map("".join)
mixed_text = st.lists(st.sampled_from(_PLAIN_PIECES + _OTHER_PIECES), max_size=8).map("".join)


@settings(max_examples=1000, deadline=None)
@given(plain_text | mixed_text)
def test_the_stdlib_patterns_give_the_terms_the_unicode_patterns_give(text):
    from unittest import mock

    from memory import tokenize

    fast = Tokenizer(JIEBA_CACHE)
    with mock.patch.object(tokenize, "_PLAIN", tokenize.unicode_patterns()):  # every text through `regex`
        reference = Tokenizer(JIEBA_CACHE)
        expected, expected_weights = reference.tokens(text), reference.query_terms(text, 0.5)
    assert fast.tokens(text) == expected and fast.query_terms(text, 0.5) == expected_weights


def test_english_and_chinese_text_is_plain_and_other_scripts_are_not():
    from memory.tokenize import plain_form

    assert plain_form("Pin node:18-alpine; don’t retry — E0382 “borrow”…") == "Pin node:18-alpine; don’t retry   E0382  borrow  "
    assert plain_form("战国无双的游戏角色，数据库连接池。テスト 한국어") == "战国无双的游戏角色 数据库连接池 テスト 한국어"
    assert plain_form("café") is plain_form("〇") is plain_form("⺀ radical") is None


def test_regex_is_imported_only_for_text_beyond_english_and_chinese():
    code = (
        "import sys; from memory.tokenize import Tokenizer; t = Tokenizer(None); "
        "t.tokens('Pin node:18-alpine; 北京大学，テスト'); print('regex' in sys.modules); "
        "t.tokens('café'); print('regex' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.split() == ["False", "True"]
