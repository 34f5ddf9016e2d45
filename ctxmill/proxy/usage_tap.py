"""Provider-reported token usage (`compress.formats.usage`), read from responses as they stream past.

`UsageTap` watches the response bytes without holding them: for SSE it keeps only the
current unfinished line and parses just the `data:` lines that mention "usage" (where each
provider puts it: its shape module's `usage_fields`); for JSON it keeps the body up to
`JSON_LIMIT` bytes.
"""

from __future__ import annotations

import orjson

from compress.formats.usage import Usage, usage_of_event

JSON_LIMIT = 8 * 2**20
LINE_LIMIT = 1 * 2**20


class UsageTap:
    def __init__(self, provider: str, event_stream: bool) -> None:
        self.provider = provider
        self.event_stream = event_stream
        self.usage: Usage | None = None
        self._partial = b""
        self._body: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> None:
        if not self.event_stream:
            self._size += len(chunk)
            if self._size <= JSON_LIMIT:
                self._body.append(chunk)
            return
        if b"\n" not in chunk:
            self._partial = (self._partial + chunk) if len(self._partial) < LINE_LIMIT else b""
            return
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            if line.startswith(b"data:") and b'"usage"' in line:
                self._event(line[5:])

    def _event(self, data: bytes) -> None:
        try:
            event = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        self.usage = usage_of_event(self.provider, self.usage, event)

    def finish(self) -> Usage | None:
        if self.event_stream:
            if self._partial.startswith(b"data:") and b'"usage"' in self._partial:
                self._event(self._partial[5:])
        elif self._body and self._size <= JSON_LIMIT:
            self._event(b"".join(self._body))
        self._partial, self._body = b"", []
        return self.usage
