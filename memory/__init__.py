"""Durable, human-readable memory: MEMORY.md files searched with BM25 (English, code and CJK).

Library API (memory.api), all taking a `memory.config.MemoryConfig` first:

    store(cfg, type, text, pin=False, tags=(), scope="project") -> Entry
        type: constraint | decision | gotcha | fact | note; scope: project | global.
        Secrets are redacted (ground.redact + cfg.redact_extra) before the file is written.
    search(cfg, query, limit=5, scope="all") -> list[Hit]   # Hit: entry, score, snippet
    forget(cfg, id) -> Entry                                 # raises NotFound
    list_entries(cfg, scope="all") -> list[Entry]
    pinned(cfg) -> list[Entry]                               # inject at every session start
    reindex(cfg) -> int                                      # entries indexed

Bad arguments raise `memory.api.BadInput`; an unknown id raises `memory.api.NotFound`; a
corrupt index file is rebuilt and reported as `memory.index_file.CorruptIndexWarning`.
Entry ids look like `m-1a2b3c4d` and never change. Files: <home>/MEMORY.md (typed sections,
see memory.markdown), <home>/notes.md (bullets are notes), <project home>/.index/index.bin.

Modules: `api` (the functions above), `config` (`MemoryConfig`, built by the faces), `entry`,
`markdown` (MEMORY.md, parsed losslessly), `reading` (memory files read bounded), `files` (the provider memory tool's files as entries),
`index_file` (over `pieces`: a file read piece by piece), `bm25`, `tokenize`, `stem`, `cjk`
(search), `similar` (near-duplicates), `checkpoint` (checkpoint.md), `extract` (what a checkpoint records) and `fixes` (which call fixed
an error), `summary` (the last checkpoint for session start), `dream` (consolidation) with `statements`
(what may enter MEMORY.md, which decision replaces which), `inject` (the memory injected at
session start, within `MemoryConfig.inject_chars`) and `usage` (how often entries were found useful).
Of the project it imports `ground/`, `ccr/` and compress's `model`, `formats` and `vocab`; never a
stage or `ctxmill/` (tests/test_layering.py).
"""
