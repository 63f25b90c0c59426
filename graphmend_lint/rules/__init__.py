"""Rule registry: built-in rules by import, third-party rules by entry point.

Built-in rules live one per module in this package, named ``gmNNN_*.py``; a
newcomer finds GM201 in ``gm201_print.py``. Third-party packages register a
:class:`Rule` subclass (or a module defining some) in the
``graphmend_lint.rules`` entry-point group.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterable
from functools import cache
from importlib.metadata import entry_points
from types import ModuleType

from graphmend_lint.rules.base import Example, Rule, RuleOption

__all__ = ["Example", "Rule", "RuleLoadError", "RuleOption", "all_rules", "rule_by_code"]

ENTRY_POINT_GROUP = "graphmend_lint.rules"


class RuleLoadError(RuntimeError):
    """A rule plugin could not be loaded or clashes with another rule."""


def _rules_in_module(module: ModuleType) -> list[type[Rule]]:
    return [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Rule)
        and not inspect.isabstract(obj)
        and obj.__module__ == module.__name__
    ]


def _builtin_rules() -> Iterable[type[Rule]]:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("gm"):
            yield from _rules_in_module(importlib.import_module(f"{__name__}.{info.name}"))


def _plugin_rules() -> Iterable[type[Rule]]:
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = entry.load()
        except Exception as exc:  # a broken plugin must name itself, not crash us
            raise RuleLoadError(f"rule plugin {entry.name!r} ({entry.value}) failed to load: {exc}") from exc
        if inspect.ismodule(loaded):
            yield from _rules_in_module(loaded)
        elif inspect.isclass(loaded) and issubclass(loaded, Rule):
            yield loaded
        else:
            raise RuleLoadError(f"rule plugin {entry.name!r} is neither a Rule subclass nor a module of rules")


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every registered rule class, sorted by code. Loaded once per process."""
    by_code: dict[str, type[Rule]] = {}
    for rule in [*_builtin_rules(), *_plugin_rules()]:
        try:
            rule.validate_definition()
        except TypeError as exc:
            raise RuleLoadError(str(exc)) from exc
        other = by_code.get(rule.code)
        if other is not None and other is not rule:
            raise RuleLoadError(f"rule code {rule.code} is defined twice: {other.__module__} and {rule.__module__}")
        by_code[rule.code] = rule
    return tuple(by_code[code] for code in sorted(by_code))


def rule_by_code(code: str) -> type[Rule] | None:
    """Look a rule up by code (``GM201``) or name (``print-in-compiled-scope``)."""
    wanted = code.strip()
    for rule in all_rules():
        if wanted.upper() == rule.code or wanted.lower() == rule.name:
            return rule
    return None
