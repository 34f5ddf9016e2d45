"""A stage's options as a config file gives them, checked against the stage's options dataclass.

Every `Stage` names its options dataclass (`Stage.options`; None: the stage takes none). A table
of per-stage options (`[compress.stages.*]` in config.toml) is checked here once, when it is
loaded, so a typo never reaches a stage as a silently ignored key.

Must hold:
- `checked_options(table, stages)` returns the table (numbers given as integers where a field is a
  float become floats) only when every name is a stage in `stages` that takes options, every key
  is a field of its dataclass, every value has the field's type, and the dataclass accepts the
  values (its own `__post_init__` checks); otherwise it raises `OptionError` with one line naming
  the first wrong name or key (with the nearest right one, when there is one);
- it reads nothing but its arguments (the caller turns `OptionError` into its own error).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from compress.stagekit.stage import Stage


class OptionError(ValueError):
    """One line: which stage option is wrong and why."""


def checked_options(table: Any, stages: Iterable[Stage], prefix: str = "stages") -> dict[str, dict[str, Any]]:
    """`table` (stage name -> its options) checked against each stage's options dataclass;
    `prefix` is how messages name the table (e.g. "compress.stages")."""
    if not isinstance(table, Mapping):
        raise OptionError(f"{prefix} must be a table")
    by_name = {stage.name: stage.options for stage in stages}
    out = {}
    for name, options in table.items():
        where = f"{prefix}.{name}"
        if name not in by_name:
            raise OptionError(f"unknown stage {where}{_nearest(name, by_name)}")
        if not isinstance(options, Mapping):
            raise OptionError(f"{where} must be a table")
        out[name] = _checked(by_name[name], dict(options), where)
    return out


def _checked(cls: type | None, options: dict[str, Any], where: str) -> dict[str, Any]:
    if cls is None:
        if options:
            raise OptionError(f"unknown key {where}.{sorted(options)[0]} (the stage takes no options)")
        return options
    hints = typing.get_type_hints(cls)
    known = [f.name for f in dataclasses.fields(cls)]
    out = {}
    for key, value in options.items():
        if key not in known:
            raise OptionError(f"unknown key {where}.{key}{_nearest(key, known)}")
        ok, value = _conform(value, hints[key])
        if not ok:
            raise OptionError(f"{where}.{key} must be {_describe(hints[key])}, got {value!r}")
        out[key] = value
    try:
        cls(**out)
    except (TypeError, ValueError) as exc:
        raise OptionError(f"{where}: {exc}") from None
    return out


def _nearest(name: str, names: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(names), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def _conform(value: Any, hint: Any) -> tuple[bool, Any]:
    """Whether a TOML value has the type `hint`, and the value as the field holds it (an
    integer given for a float becomes a float)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True, value
    if origin in (typing.Union, types.UnionType):
        for arm in args:
            ok, conformed = _conform(value, arm)
            if ok:
                return True, conformed
        return False, value
    if hint is bool:
        return isinstance(value, bool), value
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if hint is float:
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        return number, float(value) if number else value
    if hint is str:
        return isinstance(value, str), value
    if origin in (dict, Mapping) or hint in (dict, Mapping):
        if not isinstance(value, Mapping):
            return False, value
        key_hint, value_hint = args or (str, Any)
        conformed = {}
        for k, v in value.items():
            ok_key, _ = _conform(k, key_hint)
            ok_value, conformed[k] = _conform(v, value_hint)
            if not (ok_key and ok_value):
                return False, value
        return True, conformed
    if origin in (tuple, list, frozenset, set, Iterable) or hint in (tuple, list):
        if not isinstance(value, list):
            return False, value
        item_hint = args[0] if args else Any
        items = [_conform(item, item_hint) for item in value]
        return all(ok for ok, _ in items), [item for _, item in items]
    return isinstance(value, hint) if isinstance(hint, type) else False, value


def _describe(hint: Any) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(arm) for arm in args if arm is not type(None))
    if origin in (dict, Mapping):
        return f"a table of {_plural(args[1]) if args else 'values'}"
    if origin in (tuple, list, frozenset, set, Iterable):
        return f"a list of {_plural(args[0]) if args else 'values'}"
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(hint, str(hint))


def _plural(hint: Any) -> str:
    return {bool: "booleans", int: "integers", float: "numbers", str: "strings"}.get(hint, "values")
