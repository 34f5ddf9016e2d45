"""Session state: what keeps a session's output byte-stable between epochs, and where it is kept.

- `session`: `Session`, the rendering of each known message keyed by the hash of its prefix,
  loaded, recorded and saved around every run (and settled after the answer).
- `sealed`: a rendering kept at rest as a delta against the raw message the client sends again,
  so no secret the client sent is stored.
- `session_store`: where the lines live, a directory (the embedded default) or a Redis server,
  with the same five operations.

Must hold: it imports nothing else of compress/ (it remembers what the runner decided; it does not
decide: tests/test_layering.py).
"""
