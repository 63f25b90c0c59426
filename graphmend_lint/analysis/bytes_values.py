"""``bytes`` objects in code that torch.compile traces, and the methods of theirs Dynamo refuses.

Measured on torch 2.13 (CPU): Dynamo holds a ``bytes`` value as a constant
but has no handler for its methods: ``b.replace(...)``, ``split``, ``strip``,
``rstrip``, ``lower``, ``upper``, ``startswith``, ``endswith``, ``find``,
``index``, ``count``, ``hex``, ``splitlines`` each log "Unsupported method
call" (GB0156) at the call, on a literal as on ``text.encode("utf-8")``;
``b.decode(...)``, ``len(b)`` and ``list(b)`` trace, and so do the same
methods on a ``str`` (``text.replace(...).encode()`` does not break).

A value counts as bytes only when that is provable: a bytes literal,
``bytes(...)``, ``s.encode()`` of a string literal or f-string, ``x.encode(c)``
with ``c`` a codec name Python knows (``"utf-8"``; a tokenizer's ``encode``
takes text, not a codec), a bytes method that returns bytes called on one, or
a name every assignment of which is one.
"""

from __future__ import annotations

import codecs

from astroid import nodes

from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.values import ValueOracle, is_text

#: ``bytes`` methods that return ``bytes`` (a chain stays bytes).
_BYTES_RESULT_METHODS = frozenset(
    {"replace", "strip", "lstrip", "rstrip", "lower", "upper", "title", "swapcase", "capitalize", "center",
     "ljust", "rjust", "zfill", "expandtabs", "translate", "removeprefix", "removesuffix", "join"}
)  # fmt: skip
#: ``bytes`` methods Dynamo traces (measured): everything else of ``dir(bytes)`` is refused.
_TRACED_METHODS = frozenset({"decode"})
_MAX_DEPTH = 4


def refused_bytes_method(values: ValueOracle, node: nodes.NodeNG) -> str | None:
    """The method name when *node* calls a ``bytes`` method Dynamo refuses on a provable bytes value, else ``None``."""
    if not isinstance(node, nodes.Call) or not isinstance(node.func, nodes.Attribute):
        return None
    method = node.func.attrname
    if method.startswith("_") or method in _TRACED_METHODS or not hasattr(bytes, method):
        return None
    return method if is_bytes(values, node.func.expr) else None


def is_bytes(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """*node* always holds a ``bytes`` object (see the module docstring for what is provable)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, nodes.Const):
        return isinstance(node.value, bytes)
    if isinstance(node, nodes.Name):
        bound = bound_values(node)
        return bool(bound) and all(is_bytes(values, value, depth + 1) for value in bound)
    if not isinstance(node, nodes.Call):
        return False
    if isinstance(node.func, nodes.Name) and node.func.name == "bytes":
        return _is_builtin(node.func)
    if not isinstance(node.func, nodes.Attribute):
        return False
    if node.func.attrname == "encode":
        return _encodes_text(node.func.expr, node)
    return node.func.attrname in _BYTES_RESULT_METHODS and is_bytes(values, node.func.expr, depth + 1)


def _is_builtin(name: nodes.Name) -> bool:
    """*name* reads the builtin of its name (no binding of the file shadows it)."""
    try:
        scope, _ = name.lookup(name.name)
    except Exception:  # astroid lookups can fail on odd code: nothing provable
        return False
    return isinstance(scope, nodes.Module) and scope.name == "builtins"


def _encodes_text(receiver: nodes.NodeNG, call: nodes.Call) -> bool:
    """``"lit".encode(...)``, ``f"...".encode(...)``, or ``x.encode("utf-8")`` naming a codec Python knows."""
    if is_text(receiver):
        return True
    encodings = [*call.args[:1], *(k.value for k in call.keywords or [] if k.arg == "encoding")]
    return len(encodings) == 1 and _is_codec(encodings[0])


def _is_codec(node: nodes.NodeNG) -> bool:
    if not (isinstance(node, nodes.Const) and isinstance(node.value, str)):
        return False
    try:
        codecs.lookup(node.value)
    except LookupError:
        return False
    return True
