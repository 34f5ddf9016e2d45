"""How a rendered message is kept at rest without the secrets the client sent in it.

A message's rendering (what was sent upstream for it) is derived from the raw message, and the
client sends that raw message again with every later request (the session finds it by the
hash of the message prefix). So the session stores the rendering as a delta against the raw
message and leaves every secret in the client's copy:

- a value the rendering took over unchanged from the raw message at the same place: `["="]`;
- a changed dict / list: `["d", [[key, form], …]]` / `["l", [form, …]]`, each member against the
  raw member at the same key / index;
- a changed string without secrets: the string itself; with secrets: `["s", redacted, fills]`,
  `redacted` as `ground.redact.redact` writes it and each fill `[at, length, parts]` says that
  the `length` characters at `at` of `redacted` (a `[REDACTED:…]` placeholder) stand for the
  concatenated parts: `[source, start, size]` is `size` characters at `start` of the
  `source`-th string of the raw message (`ground.jsonvalues.strings_in` order), a string is
  itself. A secret is one part when the raw message holds it whole; else it is taken line by
  line, `\\n` in a JSON string included (a key block cut short by a marker), and a line found
  nowhere may be kept as it is only if it holds no secret by itself (the marker);
- a key with a secret: `["k", i]`, the raw dict's i-th key; any other JSON value: `["v", value]`.

`seal(rendered, raw)` returns the form, or None when a secret of the rendering does not occur in
the raw message (the record is then not written; the state stays correct, shorter).
`unseal(form, raw)` rebuilds the rendering: `dumps(unseal(seal(r, raw), raw)) == dumps(r)`.
Deterministic, so equal renderings seal to equal bytes.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ground.jsonvalues import strings_in
from ground.redact import replace_spans, secret_spans

SAME = ["="]
_MISSING = object()


class _Unsealable(Exception):
    """A secret of the rendering is not in the raw message."""


MIN_FRAGMENT = 4
"""A piece of a raw secret this long or longer that a cut left in a rendering is kept at rest
only as a place in the raw message."""


class _Raw:
    """The raw message's strings (and the secrets in them), listed once per seal or unseal."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self._strings: list[str] | None = None
        self._secrets: list[str] | None = None

    @property
    def strings(self) -> list[str]:
        if self._strings is None:
            self._strings = list(strings_in(self.raw))
        return self._strings

    def secrets(self, extra: tuple, allow: tuple) -> list[str]:
        """The distinct secrets the raw message holds, as `ground.redact` finds them."""
        if self._secrets is None:
            found = (s[a:b] for s in self.strings for a, b, _ in secret_spans(s, extra, allow))
            self._secrets = sorted({x for x in found if len(x) >= MIN_FRAGMENT}, key=len, reverse=True)
        return self._secrets

    def locate(self, secret: str) -> tuple[int, int]:
        for i, s in enumerate(self.strings):
            at = s.find(secret)
            if at >= 0:
                return i, at
        raise _Unsealable


def seal(rendered: Any, raw: Any, redact_extra: tuple = (), redact_allow: tuple = ()) -> Any | None:
    """The at-rest form of `rendered` against `raw` (see the module docstring), or None."""
    if rendered is raw:
        return SAME
    try:
        return _Sealer(_Raw(raw), redact_extra, redact_allow).form(rendered, raw)
    except _Unsealable:
        return None


class _Sealer:
    def __init__(self, raw: _Raw, redact_extra: tuple, redact_allow: tuple) -> None:
        self.raw, self.extra, self.allow = raw, redact_extra, redact_allow

    def form(self, value: Any, raw: Any) -> Any:
        if value is raw or (type(value) is type(raw) and value == raw):
            return SAME
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, dict):
            source = raw if isinstance(raw, dict) else {}
            return ["d", [[self.key(k, source), self.form(v, source.get(k, _MISSING))] for k, v in value.items()]]
        if isinstance(value, list):
            items = raw if isinstance(raw, list) else []
            return ["l", [self.form(v, items[i] if i < len(items) else _MISSING) for i, v in enumerate(value)]]
        return ["v", value]

    def string(self, text: str) -> Any:
        spans = _merged(secret_spans(text, self.extra, self.allow) + self.pieces_of_raw_secrets(text))
        if not spans:
            return text
        redacted = replace_spans(text, spans)
        fills, shift = [], 0
        for start, end, kind in spans:
            placeholder = len(f"[REDACTED:{kind}]")
            fills.append([start + shift, placeholder, self.parts(text[start:end])])
            shift += placeholder - (end - start)
        return ["s", redacted, fills]

    def pieces_of_raw_secrets(self, text: str) -> list[tuple[int, int, str]]:
        """Where `text` holds a secret of the raw message, or the longest head or tail of one
        (at least `MIN_FRAGMENT` characters) that a cut left behind: a key or password cut short
        is no longer recognisable by its pattern."""
        spans = []
        for secret in self.raw.secrets(self.extra, self.allow):
            rest = text
            if secret in text:  # whole here, and maybe cut short elsewhere (a trim between its lines)
                spans += _places(text, secret)
                rest = text.replace(secret, "\0" * len(secret))
            heads = (secret[:n] for n in range(len(secret) - 1, MIN_FRAGMENT - 1, -1))
            tails = (secret[-n:] for n in range(len(secret) - 1, MIN_FRAGMENT - 1, -1))
            for piece in (next((h for h in heads if h in rest), None), next((t for t in tails if t in rest), None)):
                spans += _places(rest, piece) if piece else []
        return spans

    def parts(self, secret: str) -> list:
        try:
            return [[*self.raw.locate(secret), len(secret)]]
        except _Unsealable:
            if not _LINE_BREAK.search(secret):
                raise
        out: list = []
        pieces = _LINE_BREAK.split(secret)
        for i, body in enumerate(pieces):
            if i % 2:  # a line break, as it is or JSON-escaped
                out.append(body)
            elif body:
                try:
                    out.append([*self.raw.locate(body), len(body)])
                except _Unsealable:
                    if secret_spans(body, self.extra, self.allow):
                        raise
                    out.append(body)
        return out

    def key(self, key: str, source: dict) -> Any:
        if not _has_secret(key, self.extra, self.allow):
            return key
        for i, k in enumerate(source):
            if k == key:
                return ["k", i]
        raise _Unsealable


def _places(text: str, piece: str) -> list[tuple[int, int, str]]:
    """Every place `piece` occurs in `text`, as a span."""
    spans, at = [], text.find(piece)
    while at >= 0:
        spans.append((at, at + len(piece), "secret"))
        at = text.find(piece, at + 1)
    return spans


_LINE_BREAK = re.compile(r"(\r\n|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]|(?:\\+r)?\\+n)")
"""A line break inside a secret (what `str.splitlines` splits at), also as a JSON string writes
it (a key block in a service account file): a secret cut short is located line by line."""


def _merged(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """`spans` sorted, overlapping ones joined (the first one's kind names the join)."""
    out: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(spans):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]), out[-1][2])
        else:
            out.append((start, end, kind))
    return out


@lru_cache(maxsize=4096)
def _has_secret(key: str, extra: tuple, allow: tuple) -> bool:
    return bool(secret_spans(key, extra, allow))


def unseal(form: Any, raw: Any) -> Any:
    """The rendering `form` stands for, rebuilt from `raw` (the same raw message it was sealed
    against). Raises ValueError when `form` does not fit `raw`."""
    try:
        return _open(form, raw, _Raw(raw))
    except (LookupError, TypeError) as exc:
        raise ValueError(f"session record does not fit its message: {exc}") from None


def _open(form: Any, raw: Any, msg: _Raw) -> Any:
    if isinstance(form, str):
        return form
    tag = form[0]
    if tag == "=":
        if raw is _MISSING:
            raise LookupError("'same' where the raw message has nothing")
        return raw
    if tag == "d":
        source = raw if isinstance(raw, dict) else {}
        keys = list(source)
        out = {}
        for key, member in form[1]:
            name = keys[key[1]] if isinstance(key, list) else key
            out[name] = _open(member, source.get(name, _MISSING), msg)
        return out
    if tag == "l":
        items = raw if isinstance(raw, list) else []
        return [_open(member, items[i] if i < len(items) else _MISSING, msg) for i, member in enumerate(form[1])]
    if tag == "s":
        text, pieces, at = form[1], [], 0
        for pos, length, parts in form[2]:
            pieces.append(text[at:pos])
            for part in parts:
                if isinstance(part, str):
                    pieces.append(part)
                    continue
                source, start, size = part
                secret = msg.strings[source][start:start + size]
                if len(secret) != size:
                    raise LookupError("a secret's place is outside its string")
                pieces.append(secret)
            at = pos + length
        pieces.append(text[at:])
        return "".join(pieces)
    if tag == "v":
        return form[1]
    raise LookupError(f"unknown tag {tag!r}")
