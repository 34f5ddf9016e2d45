"""CCR (compress-cache-retrieve): every original the compressor cuts, stored and given back.

- `ccr.base`: what every store shares (`OriginalsStore`: put, batch, get, refresh; `Lookup`, messages).
- `ccr.store`: the SQLite store of originals (`CCRStore`, the default), expiry and eviction.
- `ccr.redis_store`: the same in Redis / Valkey (`RedisCCRStore`), for several machines.
- `ccr.stores`: `open_store`, which of the two a face opens.
- `ccr.keys`: the key format (xxh3_128 of the text, 32 lowercase hex).
- `ccr.markers`: the one writer and parser of `[ctxmill: …]` markers and `<<ctxmill: …>>` notes.
- `ccr.expand`: `deep_expand`, an original whole or a slice of it.

Imports only `ground/`, never `compress/`, `memory/` or `ctxmill/`.
"""
