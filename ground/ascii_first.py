"""A pattern matched with the standard `re` on ASCII text and with `regex` on the rest.

Importing `regex` costs a process ~9 ms, and a hook that starts one per prompt mostly reads
ASCII (an English prompt, a memory file's entry comments). Must hold: `Pattern(p)` finds exactly
what `regex.compile(p)` finds, on any text: for ASCII text the two engines agree on `\\w`, `\\d`,
`\\b` and classes of ASCII characters; they do not on `\\s` (`re` counts \\x1c-\\x1f as space), so
a pattern with `\\s`, `\\p{…}` or another `regex`-only construct is refused.
tests/test_ascii_first.py checks the patterns that use it against `regex` (hypothesis).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # as typing.TYPE_CHECKING: a hook's process does not import typing for this
if TYPE_CHECKING:
    from collections.abc import Iterator

    import regex


class Pattern:
    """`regex.compile(pattern)`, with `regex` imported only for the first non-ASCII text."""

    def __init__(self, pattern: str) -> None:
        if "\\s" in pattern or "\\S" in pattern or "\\p" in pattern or "\\P" in pattern:
            raise ValueError(f"{pattern!r}: \\s and \\p read differently in re and regex")
        self.pattern = pattern
        self._ascii = re.compile(pattern)
        self._unicode: regex.Pattern[str] | None = None

    def _for(self, text: str):
        if text.isascii():
            return self._ascii
        if self._unicode is None:
            import regex

            self._unicode = regex.compile(self.pattern)
        return self._unicode

    def findall(self, text: str) -> list:
        return self._for(text).findall(text)

    def finditer(self, text: str) -> Iterator:
        return self._for(text).finditer(text)

    def search(self, text: str):
        return self._for(text).search(text)
