"""The attribute names a computed string can spell: ``"{}_reduction".format(kind)`` -> ``*_reduction``.

Code dispatches to methods by name: pytorch-metric-learning's reducers run
``getattr(self, "{}_reduction".format(reduction_type))``, mmdetection-style
heads ``getattr(self, f"_forward_{mode}")``. The name is only known at run
time, but its literal parts narrow it to the methods whose names fit, which is
what scope analysis needs to follow the call.
"""

from __future__ import annotations

import ast
import re
import string

#: A pattern must keep at least this many literal characters: ``getattr(self, name)`` fits every method.
_MIN_LITERAL = 3
_ANY = ".*"


def name_pattern(expr: ast.expr) -> re.Pattern[str] | None:
    """A pattern matching every string *expr* can evaluate to, or ``None`` when it says too little.

    Reads string literals, f-strings, ``"...".format(...)`` and ``+`` of
    those; every part computed at run time matches anything.
    """
    parts = _parts(expr)
    if parts is None or sum(len(part) for part in parts if part is not _ANY) < _MIN_LITERAL:
        return None
    return re.compile("".join(part if part is _ANY else re.escape(part) for part in parts))


def _parts(expr: ast.expr) -> list[str] | None:
    """Literal text and :data:`_ANY` markers, in order; ``None`` when *expr* may not be a string."""
    if isinstance(expr, ast.Constant):
        return [expr.value] if isinstance(expr.value, str) else None
    if isinstance(expr, ast.JoinedStr):
        return [
            value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else _ANY
            for value in expr.values
        ]
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        left, right = _parts(expr.left), _parts(expr.right)
        if left is None and right is None:
            return None  # neither side is known to be a string
        return (left if left is not None else [_ANY]) + (right if right is not None else [_ANY])
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "format"
        and isinstance(expr.func.value, ast.Constant)
        and isinstance(expr.func.value.value, str)
    ):
        return _format_parts(expr.func.value.value)
    return None


def _format_parts(template: str) -> list[str] | None:
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:  # an unbalanced brace: the call raises
        return None
    parts: list[str] = []
    for literal, field, _, _ in fields:
        parts.append(literal)
        if field is not None:
            parts.append(_ANY)
    return parts
