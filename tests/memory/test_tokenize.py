"""The memory tokenizer: identifiers, stemming, stopwords, CJK chars/bigrams/jieba words."""

import subprocess
import sys

from memory.tokenize import Tokenizer

from memory_helpers import JIEBA_CACHE, REPO


def test_identifiers_are_kept_whole_and_split():
    tokens = Tokenizer().tokens("memory_store getUserName HTTPServer")
    assert tokens[:3] == ["memory_store", "memori", "store"]
    assert {"getusername", "get", "user", "name", "httpserver", "http", "server"} <= set(tokens)


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
        "t.tokens('plain english テスト'); print('jieba' in sys.modules); t.tokens('中文'); print('jieba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.split() == ["False", "True"]
    assert out.stderr == ""  # jieba's "Building prefix dict" chatter is silenced


def test_jieba_dictionary_cache_is_written_and_reused(tmp_path):
    first = Tokenizer(tmp_path).tokens("我们在北京大学学习")
    assert list(tmp_path.glob("jieba-dict-*.bin"))
    assert Tokenizer(tmp_path).tokens("我们在北京大学学习") == first
