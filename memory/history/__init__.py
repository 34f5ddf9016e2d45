"""Searchable history: every session's messages, secrets redacted, in one SQLite store per user.

- `config.HistoryConfig`: where the store lives, its size budget, redaction (built by the faces).
- `messages.rows_of(transcript)`: a recorded session (any `compress.formats.sessions` reader) as
  rows, one per message: role, redacted text, and the normalised tool steps `memory.distill` mines.
- `store.HistoryStore`: ingest (incremental, idempotent), oldest-first eviction under the budget,
  search (words ranked by BM25 over memory's tokenizer, or a regular expression with a time
  limit), get (a message or a range with its neighbours), list, stats.
"""
