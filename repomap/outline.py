"""A file's outline: its definitions (with signatures) and the identifiers it uses.

`outline(path, data)` parses with the file's tree-sitter grammar (`repomap.languages`). A
definition's signature is its source from its first character to the start of its body (or
the end of its first line), whitespace and control or format characters collapsed to one
space, at most `SIGNATURE_CHARS`; members of containers are nested one level deeper. The
identifiers a file uses are the distinct words of its text that look like names, which the
ranking matches against other files' definitions. Never raises on bad input: a file that does
not parse yields what the parser recovered, and the walk of the tree is iterative and bounded,
so no nesting depth raises RecursionError.
"""

from __future__ import annotations

import re
from functools import cache

from ground.records import Record
from repomap.languages import CONTAINERS, LEAVES, NAMED_VALUES, grammar_for, parser_for

SIGNATURE_CHARS = 160
MAX_DEFS = 400
MAX_REFS = 1500
MAX_DEPTH = 4
"""Containers nested deeper than this are not searched for members."""
MAX_NESTING = 200
MAX_NODES = 200_000
_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]{2,}")


@cache
def _space():
    """Whitespace and the characters that could move a terminal's cursor or reorder text (an ANSI
escape, a bidi override): a signature is one line of plain text. Compiled when a file is
    outlined (`regex` costs a process that only reads the index ~9 ms)."""
    import regex

    return regex.compile(r"[\s\p{Cc}\p{Cf}\p{Zl}\p{Zp}]+")


class Definition(Record):
    kind: str
    """"container" (its members follow, one level deeper) or "leaf"."""
    name: str
    signature: str
    line: int
    depth: int


class Outline(Record):
    defs: tuple[Definition, ...]
    refs: tuple[str, ...]


EMPTY = Outline((), ())


def outline(path: str, data: bytes) -> Outline:
    """The outline of `data`, the content of the file at `path` (EMPTY when no grammar fits)."""
    grammar = grammar_for(path)
    if grammar is None:
        return EMPTY
    try:
        parser = parser_for(*grammar)
    except (ImportError, AttributeError, ValueError):
        return EMPTY
    tree = parser.parse(data)
    defs: list[Definition] = []
    _collect(tree.root_node, data, defs)
    own = {d.name for d in defs}
    refs = sorted({m.decode() for m in _NAME.findall(data)} - own)
    return Outline(tuple(defs[:MAX_DEFS]), tuple(refs[:MAX_REFS]))


def _collect(root, data: bytes, out: list[Definition]) -> None:
    """The definitions under `root`, in source order, without recursion (a file nested a
    thousand levels deep is walked like any other): at most MAX_DEFS, MAX_NESTING open nodes
    and MAX_NODES visited."""
    stack = [(iter(root.named_children), 0)]
    visited = 0
    while stack and visited < MAX_NODES:
        iterator, depth = stack[-1]
        child = next(iterator, None)
        if child is None:
            stack.pop()
            continue
        if len(out) >= MAX_DEFS:
            return
        visited += 1
        kind = _kind(child)
        deeper = len(stack) < MAX_NESTING
        if kind is None:
            if depth < MAX_DEPTH and child.type not in LEAVES and deeper:
                stack.append((iter(child.named_children), depth))
            continue
        name = _name(child)
        if name:
            out.append(
                Definition(kind, name, _signature(child, data), child.start_point[0] + 1, depth)
            )
        if kind == "container" and depth < MAX_DEPTH and deeper:
            stack.append((iter(child.named_children), depth + 1))


def _kind(node) -> str | None:
    if node.type in CONTAINERS:
        return "container" if _body(node) is not None else None
    if node.type in LEAVES:
        return "leaf"
    if node.type == "variable_declarator":
        value = node.child_by_field_name("value")
        if value is not None and value.type in NAMED_VALUES:
            return "leaf"
    return None


def _body(node):
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    return next(
        (
            c
            for c in node.named_children
            if c.type.endswith(("body", "block", "declaration_list", "field_declaration_list"))
        ),
        None,
    )


def _name(node) -> str:
    """The defined name: the `name` field, else down `declarator` fields (C, C++), else the
    implemented type of an impl block."""
    for _ in range(6):
        if node is None:
            return ""
        named = node.child_by_field_name("name")
        if named is not None:
            return _text(named)
        nxt = node.child_by_field_name("declarator") or node.child_by_field_name("type")
        if nxt is None:
            return _text(node) if node.type.endswith("identifier") else ""
        node = nxt
    return ""


def _signature(node, data: bytes) -> str:
    if node.type == "variable_declarator":  # `const f = (a) => …`: up to the function's body
        body = node.child_by_field_name("value").child_by_field_name("body")
    else:
        body = _body(node)
    end = (
        body.start_byte if body is not None and body.start_byte > node.start_byte else node.end_byte
    )
    head = data[node.start_byte : end]
    first = head.split(b"\n", 1)[0] if body is None else head
    text = _space().sub(" ", first.decode("utf-8", "replace")).strip().rstrip("{:").strip()
    return text if len(text) <= SIGNATURE_CHARS else text[: SIGNATURE_CHARS - 1] + "…"


def _text(node) -> str:
    return node.text.decode("utf-8", "replace") if node.text else ""
