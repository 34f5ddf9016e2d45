"""Real queries that must find their entry first, through `memory.api.search` (decay on).

Each probe is a way an agent or a person actually spells a code-shaped thing differently from
how it was stored: digits glued to words, camelCase, hyphens, full-width letters, C++ and C#.
The memory around them holds near misses that share a word, a tag or a prefix, with a mix of
ages so recency decay is in play.
"""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from memory import api


@pytest.fixture(autouse=True)
def fresh_process_cache():
    api._indexes.clear()
    yield
    api._indexes.clear()


def _day(days_ago: int) -> str:
    return (date.today() - timedelta(days=days_ago)).isoformat()


# (id, section, text, days old, tags)
ENTRIES = [
    ("m-0000b64e", "Decisions", "Attachment bodies go through base64Encode() from src/codec.ts, never btoa", 200, ()),
    ("m-0000e2c1", "Facts", "encodeURIComponent is applied to every query parameter by the http client", 10, ("http",)),
    ("m-0000ba5e", "Facts", "The base image for the worker is debian bookworm slim", 5, ("docker",)),
    ("m-00000de1", "Facts", "CI builds the frontend in node:18-alpine; the sharp binary needs it", 300, ("ci",)),
    ("m-00000de2", "Decisions", "Upgrade the frontend to the next node LTS once sharp supports it", 3, ("node",)),
    ("m-00000a19", "Gotchas", "alpine images lack glibc, so python wheels for the worker use debian", 20, ("docker",)),
    ("m-0000100d", "Gotchas", "Debounce the file watcher by 100 ms or every save fires twice", 250, ()),
    ("m-0000100e", "Facts", "The proxy waits 30 s for the upstream before it gives up", 2, ("proxy",)),
    ("m-00007f81", "Gotchas", "Read every transcript as UTF-8 with errors=replace; some have stray bytes", 400, ("io",)),
    ("m-00007f82", "Facts", "The legacy FTP export is latin-1 encoded text", 15, ("io",)),
    ("m-0000a0a2", "Decisions", "GitHub login uses the OAuth2 device flow, tokens kept in the OS keychain", 320, ()),
    ("m-0000a0a3", "Facts", "Session cookies expire after 14 days", 4, ("auth",)),
    ("m-0000a0a4", "Decisions", "Passwords are hashed with argon2id", 6, ("auth", "security")),
    ("m-0000a0a5", "Gotchas", "Auth middleware must run before the rate limiter", 8, ("auth",)),
    ("m-0000c0a1", "Constraints", "Run the precommit hooks (make precommit) before every push", 90, ()),
    ("m-0000c0a2", "Facts", "Commit messages use the imperative mood and a scope prefix", 2, ("git",)),
    ("m-0000c0a3", "Facts", "Git hooks live in .githooks and are installed by make setup", 12, ("git",)),
    ("m-0000f011", "Facts", "用户ＡＰＩ的限流是每分钟60次，超过返回429", 150, ()),
    ("m-0000f012", "Facts", "数据库连接池的大小是20", 3, ()),
    ("m-0000cc01", "Facts", "The native addon is written in C++ and built with node-gyp", 180, ()),
    ("m-0000cc02", "Facts", "Unity gameplay scripts are C# and live in Assets/Scripts", 180, ()),
    ("m-0000cc03", "Facts", "The C client library is vendored under third_party/", 2, ()),
    ("m-0000e382", "Gotchas", "rustc E0382 in the watcher: the config is moved into the thread; clone the Arc first, then borrow", 420, ()),
    ("m-0000e502", "Gotchas",
     "E0502: cannot borrow `state` as mutable because it is also borrowed as immutable; end the shared borrow first",
     21, ("rust", "borrow")),
    ("m-0000e499", "Facts", "Rust edition 2021 is required for the watcher crate", 30, ("rust",)),
]


TOKENIZER_PROBES = [
    ("base64 encode", "m-0000b64e"),  # base64Encode(): split at digit -> capital
    ("base64Encode", "m-0000b64e"),
    ("node18", "m-00000de1"),  # node:18-alpine
    ("node 18 alpine", "m-00000de1"),
    ("100ms", "m-0000100d"),  # 100 ms
    ("utf8", "m-00007f81"),  # UTF-8
    ("UTF8", "m-00007f81"),
    ("oauth", "m-0000a0a2"),  # OAuth2
    ("pre-commit", "m-0000c0a1"),  # precommit
    ("API", "m-0000f011"),  # full-width ＡＰＩ
    ("ＡＰＩ 限流", "m-0000f011"),
    ("C++", "m-0000cc01"),
    ("C#", "m-0000cc02"),
]
RANKING_PROBES = [
    ("e0382 borrow", "m-0000e382"),  # above the 3-week-old E0502 entry tagged #borrow
    ("E0382", "m-0000e382"),
    ("OAuth", "m-0000a0a2"),  # ahead of entries that only share the #auth tag
    ("e0502", "m-0000e502"),
]
TARGETS = {expected for _, expected in TOKENIZER_PROBES + RANKING_PROBES}


@pytest.fixture(params=["ages as listed", "every probed entry 10 years old"])
def memory(cfg, request):
    """The memory as listed, and with every entry a probe looks for aged to the decay floor."""
    sections: dict[str, list[str]] = {}
    for entry_id, section, text, age, tags in ENTRIES:
        if request.param != "ages as listed" and entry_id in TARGETS:
            age = 3650
        meta = " ".join([entry_id, _day(age), *("#" + t for t in tags)])
        sections.setdefault(section, []).append(f"- {text} <!-- {meta} -->\n")
    body = "# Memory\n" + "".join(f"\n## {name}\n\n" + "".join(lines) for name, lines in sections.items())
    cfg.project_home.mkdir(parents=True)
    (cfg.project_home / "MEMORY.md").write_text(body, encoding="utf-8")
    return cfg


def first(cfg, query: str) -> str:
    hits = api.search(cfg, query, limit=5)
    assert hits, f"{query!r} found nothing"
    return hits[0].entry.id


@pytest.mark.parametrize(("query", "expected"), TOKENIZER_PROBES)
def test_tokenizer_probe_finds_its_entry_first(memory, query, expected):
    assert first(memory, query) == expected


@pytest.mark.parametrize(("query", "expected"), RANKING_PROBES)
def test_ranking_probe_finds_exact_match_first_despite_decay_and_tags(memory, query, expected):
    assert first(memory, query) == expected


def test_tags_and_recency_still_rank_among_equal_matches(memory):
    hits = [h.entry.id for h in api.search(memory, "auth", limit=4)]
    assert set(hits[:3]) == {"m-0000a0a3", "m-0000a0a4", "m-0000a0a5"}  # the #auth-tagged entries
    notes = {h.entry.id: h.score for h in api.search(memory, "docker", limit=5)}
    assert notes["m-0000ba5e"] > notes["m-00000a19"]  # same tag, same length class: newer first


def test_recency_is_the_memory_configs_and_zero_ignores_age(memory):
    """Two entries tagged #docker of one length class: with the default recency the newer ranks
    first; with recency 0 age is ignored, so the scores are the BM25 scores alone."""
    default = {h.entry.id: h.score for h in api.search(memory, "docker", limit=5)}
    ageless = {h.entry.id: h.score for h in api.search(memory.replace(recency=0.0), "docker", limit=5)}
    full = {h.entry.id: h.score for h in api.search(memory.replace(recency=1.0), "docker", limit=5)}
    for entry_id in ("m-0000ba5e", "m-00000a19"):  # 5 and 20 days old
        assert full[entry_id] < default[entry_id] < ageless[entry_id]
    assert ageless["m-0000ba5e"] / ageless["m-00000a19"] < default["m-0000ba5e"] / default["m-00000a19"]
