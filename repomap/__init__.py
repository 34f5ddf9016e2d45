"""A map of a repository's definitions, ranked for a prompt and cut to a token budget.

    build_map(root, prompt, recent, budget, cache_file) -> RepoMap   # repomap.api

The map lists files and, under each, the signatures of its classes, functions and methods,
parsed with tree-sitter and its grammar packages (`repomap.languages`). Files are ranked for
the prompt (its words and identifiers against paths and defined names), the files the session
touched recently, and what uses what (a file that uses names another defines passes it part of
its score) (`repomap.rank`). Outlines are cached per file by size, mtime and content hash
(`repomap.index`), so a warm map of a large repository reads no unchanged file.

Deterministic: the same files, prompt and recent list give the same text.
"""
