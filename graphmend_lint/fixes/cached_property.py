"""GM509's unsafe fix for a ``functools.cached_property`` read in compiled code: make the getter a ``property``.

A ``property`` takes no lock, so Dynamo traces its getter (measured: the
catalog's ``bad_cached_property.py`` goes from a skipped ``forward`` to one
graph). The value is then computed on every read instead of once, which is
only offered when the getter is provably cheap and free of side effects:
local assignments and one final ``return`` over reads of ``self``
attributes, constants, arithmetic, comparisons and a few pure builtins,
and no value the oracle knows to be a tensor (a cached tensor keeps its
autograd graph and goes stale as parameters change; a recomputed one does
neither, so eager results would differ).
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.lookup import is_builtin_call
from graphmend_lint.analysis.values import ELEMENTWISE_BUILTINS, HOST_CONVERSIONS, Kind, ValueOracle
from graphmend_lint.analysis.walk import descendants
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix

#: Builtins a cheap getter may call: pure functions of their arguments.
_PURE_BUILTINS = ELEMENTWISE_BUILTINS | HOST_CONVERSIONS | {"len", "round"}
_EXPRESSIONS = (
    nodes.Const,
    nodes.Name,
    nodes.Attribute,
    nodes.Subscript,
    nodes.Slice,
    nodes.BinOp,
    nodes.UnaryOp,
    nodes.BoolOp,
    nodes.Compare,
    nodes.IfExp,
    nodes.Tuple,
    nodes.Call,
)


def property_fix(analysis: FileAnalysis, getter: nodes.FunctionDef) -> Fix | None:
    """``@cached_property`` -> ``@property`` on *getter*, or ``None`` when its body is not provably cheap and pure."""
    decorators = getter.decorators.nodes if getter.decorators else []
    if len(decorators) != 1 or _shadowed("property", getter) or not _is_cheap(analysis.values, getter):
        return None
    decorator = decorators[0]
    edit = Edit(analysis.start_of(decorator), analysis.end_of(decorator), "property")
    message = f"make `{getter.name}` a `property` (recomputed on every read; no lock to enter)"
    return Fix(edits=(edit,), applicability=Applicability.UNSAFE, message=message)


def _shadowed(name: str, function: nodes.FunctionDef) -> bool:
    """Whether *name* is bound in the module or the class around *function* (the builtin is then not meant)."""
    return name in function.root().locals or name in function.parent.frame().locals


def _is_cheap(values: ValueOracle, getter: nodes.FunctionDef) -> bool:
    """Local assignments, then one ``return``, over :func:`_is_cheap_expression` values only."""
    arguments = getter.args
    if [a.name for a in arguments.args or []] != ["self"] or arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
        return False
    *assignments, last = getter.body
    if not isinstance(last, nodes.Return) or last.value is None:
        return False
    for statement in assignments:
        if isinstance(statement, nodes.Expr) and isinstance(statement.value, nodes.Const):
            continue  # the docstring
        if not (
            isinstance(statement, nodes.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], nodes.AssignName)
        ):
            return False
    expressions = [s.value for s in getter.body if isinstance(s, (nodes.Assign, nodes.Return))]
    return all(_is_cheap_expression(values, getter, expression) for expression in expressions)


def _is_cheap_expression(values: ValueOracle, getter: nodes.FunctionDef, expression: nodes.NodeNG) -> bool:
    for node in descendants(expression, nodes.NodeNG):
        if not isinstance(node, _EXPRESSIONS) or values.kind(node) is Kind.TENSOR:
            return False
        callee = isinstance(node.parent, nodes.Call) and node.parent.func is node
        if isinstance(node, nodes.Name) and node.name not in getter.locals and not callee:
            return False  # a global could be rebound between reads
        if isinstance(node, nodes.Call) and not (
            isinstance(node.func, nodes.Name)
            and node.func.name in _PURE_BUILTINS
            and not node.keywords
            and is_builtin_call(node, node.func.name)
        ):
            return False
    return True
