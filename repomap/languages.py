"""Which tree-sitter grammar parses a file, and which of its nodes are definitions.

Grammars come from the tree-sitter organisation's packages on PyPI (`tree-sitter-python`, …);
each is imported only when a file of its language is parsed. A definition node is either a
container (a class, interface, module, impl block: its body is searched for members) or a leaf
(a function or method: its body is not searched).
"""

from __future__ import annotations

import importlib
from functools import cache

# extension -> (module, function returning the language pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    ".py": ("tree_sitter_python", "language"),
    ".pyi": ("tree_sitter_python", "language"),
    ".js": ("tree_sitter_javascript", "language"),
    ".jsx": ("tree_sitter_javascript", "language"),
    ".mjs": ("tree_sitter_javascript", "language"),
    ".cjs": ("tree_sitter_javascript", "language"),
    ".ts": ("tree_sitter_typescript", "language_typescript"),
    ".mts": ("tree_sitter_typescript", "language_typescript"),
    ".tsx": ("tree_sitter_typescript", "language_tsx"),
    ".go": ("tree_sitter_go", "language"),
    ".rs": ("tree_sitter_rust", "language"),
    ".java": ("tree_sitter_java", "language"),
    ".c": ("tree_sitter_c", "language"),
    ".h": ("tree_sitter_c", "language"),
    ".cc": ("tree_sitter_cpp", "language"),
    ".cpp": ("tree_sitter_cpp", "language"),
    ".cxx": ("tree_sitter_cpp", "language"),
    ".hpp": ("tree_sitter_cpp", "language"),
    ".hh": ("tree_sitter_cpp", "language"),
    ".rb": ("tree_sitter_ruby", "language"),
    ".php": ("tree_sitter_php", "language_php"),
    ".cs": ("tree_sitter_c_sharp", "language"),
}

CONTAINERS = frozenset(
    {
        "class_definition",
        "class_declaration",
        "abstract_class_declaration",
        "interface_declaration",
        "enum_declaration",
        "struct_declaration",
        "record_declaration",
        "namespace_declaration",
        "trait_declaration",
        "class_specifier",
        "struct_specifier",
        "namespace_definition",
        "struct_item",
        "enum_item",
        "trait_item",
        "impl_item",
        "mod_item",
        "class",
        "module",
        "type_declaration",
        "object_declaration",
    }
)
LEAVES = frozenset(
    {
        "function_definition",
        "function_declaration",
        "generator_function_declaration",
        "method_definition",
        "method_declaration",
        "constructor_declaration",
        "function_item",
        "function_signature_item",
        "method",
        "singleton_method",
        "type_alias_declaration",
        "type_spec",
        "arrow_function_declarator",
        "abstract_method_signature",
        "method_signature",
    }
)
NAMED_VALUES = frozenset({"arrow_function", "function_expression", "function", "class"})
"""A variable declared with one of these as its value is a definition (`const f = () => …`)."""


def grammar_for(path: str) -> tuple[str, str] | None:
    dot = path.rfind(".")
    return GRAMMARS.get(path[dot:].lower()) if dot >= 0 else None


@cache
def parser_for(module: str, function: str):
    """A tree-sitter parser for the grammar; ImportError when the package is not installed."""
    import tree_sitter

    language = tree_sitter.Language(getattr(importlib.import_module(module), function)())
    return tree_sitter.Parser(language)


def supported(path: str) -> bool:
    return grammar_for(path) is not None
