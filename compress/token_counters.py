"""Token counting: a fast o200k_base estimator for the hot path, exact counters for reports.

`estimate_tokens` is a linear model over character-class counts computed with C-level bytes
operations (one UTF-8 encode, two `bytes.translate`, a handful of `bytes.count`), so it costs
a few milliseconds per megabyte. Its coefficients are fitted by `bench/calibrate_tokens.py`
against o200k_base on recorded agent transcripts (English, Chinese, code, logs, JSON).

Exact counting uses the `bpe-openai` package (ships the o200k vocabulary, works offline) or
tiktoken when its o200k file is already in the cache folder the face passes in
(`ctxmill.settings.tiktoken_cache`); both are imported only when asked for.
`get_counter(prefer_exact=False)` never fails: without an exact backend it returns ESTIMATOR.
"""

from __future__ import annotations

from pathlib import Path

TYPE_CHECKING = False  # as typing.TYPE_CHECKING: a prompt's hook estimates tokens without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Protocol
else:
    Protocol = object  # TokenCounter is a type to annotate with, never a base to check against

# Feature order of `estimator_features` and `_COEFFICIENTS`. Letters and whitespace are not
# counted: they are implied by `chars` (each count costs a pass over the text).
FEATURE_NAMES = (
    "chars",  # code points
    "breaks",  # ASCII capitals and punctuation: each tends to start a new token
    "digits",  # ASCII digits
    "digit_triples",  # non-overlapping "ddd" groups: o200k splits numbers into 1-3 digit tokens
    "non_ascii",  # non-ASCII code points (CJK, kana, Hangul, accents, symbols, emoji)
)

# Fitted by bench/calibrate_tokens.py on the shared transcript corpus (paste its output here).
_COEFFICIENTS = (0.1755, 0.3802, 1.6256, -4.2490, 0.6097)


def _class_table() -> bytes:
    """Maps each UTF-8 byte to a class symbol: a (lowercase), . (capital or punctuation), 0, space,
    and N for a non-ASCII lead byte.

    Continuation bytes (0x80-0xBF) are deleted by the caller, so one symbol stands for one code point.
    """
    table = bytearray(b"N" * 256)
    for byte in range(128):
        char = chr(byte)
        if char.islower():
            table[byte] = ord("a")
        elif char.isdigit():
            table[byte] = ord("0")
        elif char in " \t\n\r\f\v":
            table[byte] = ord(" ")
        else:
            table[byte] = ord(".")
    return bytes(table)


_CLASSES = _class_table()
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


def estimator_features(text: str) -> tuple[int, ...]:
    """Counts named by FEATURE_NAMES, from one UTF-8 encode, one translate and four C-level counts."""
    classes = text.encode("utf-8", "surrogatepass").translate(_CLASSES, _CONTINUATION_BYTES)
    return (
        len(classes),
        classes.count(b"."),
        classes.count(b"0"),
        classes.count(b"000"),
        0 if text.isascii() else classes.count(b"N"),  # isascii is O(1) on a str
    )


def estimate_tokens(text: str) -> int:
    """Estimated o200k_base token count: 0 for "", at least 1 otherwise; never raises on a str."""
    if not text:
        return 0
    total = sum(w * f for w, f in zip(_COEFFICIENTS, estimator_features(text)))
    return max(1, round(total))


class TokenCounter(Protocol):
    """Counts tokens of a text; `name` says which tokenizer (or the estimator) it is."""

    name: str

    def count(self, text: str) -> int: ...


class _FunctionCounter:
    def __init__(self, name: str, count: Callable[[str], int]) -> None:
        self.name = name
        self.count = count

    def __repr__(self) -> str:
        return f"<TokenCounter {self.name}>"


ESTIMATOR: TokenCounter = _FunctionCounter("estimate", estimate_tokens)


def _without_surrogates(text: str) -> str:
    """The text as valid UTF-8: lone surrogates become U+FFFD (what a tokenizer would see)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def _bpe_openai_counter() -> TokenCounter | None:
    """o200k_base from bpe-openai's Rust tokenizer (no size limits, special tokens as plain text)."""
    try:
        from bpe_openai import _bindings

        tokenizer = _bindings.tokenizer_for_encoding("o200k_base")
    except Exception:  # noqa: BLE001 - missing or broken package means "not usable", fall back
        return None
    return _FunctionCounter("o200k_base (bpe-openai)", lambda text: tokenizer.count(_without_surrogates(text)))


_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def _tiktoken_counter(cache: Path | None) -> TokenCounter | None:
    """o200k_base from tiktoken, only when its vocabulary file is in tiktoken's `cache` folder
    (no network needed)."""
    import hashlib  # here: a hook that only estimates does not load OpenSSL

    if cache is None or not (cache / hashlib.sha1(_O200K_URL.encode()).hexdigest()).is_file():
        return None
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("o200k_base")
    except Exception:  # noqa: BLE001 - any failure to load means "not usable", fall back
        return None
    return _FunctionCounter("o200k_base (tiktoken)", lambda text: len(encoding.encode_ordinary(_without_surrogates(text))))


_exact: dict[Path | None, TokenCounter | None] = {}  # memo by tiktoken cache; None: none usable


def exact_counter(tiktoken_cache: Path | None = None) -> TokenCounter | None:
    """The first usable exact o200k_base counter (loaded once per process), or None: bpe-openai,
    else tiktoken when its vocabulary is in `tiktoken_cache` (None: tiktoken is not tried)."""
    if tiktoken_cache not in _exact:
        _exact[tiktoken_cache] = _bpe_openai_counter() or _tiktoken_counter(tiktoken_cache)
    return _exact[tiktoken_cache]


def get_counter(prefer_exact: bool = False, tiktoken_cache: Path | None = None) -> TokenCounter:
    """An exact o200k_base counter when preferred and available, else ESTIMATOR."""
    return (exact_counter(tiktoken_cache) if prefer_exact else None) or ESTIMATOR
