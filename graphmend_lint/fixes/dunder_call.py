"""Call an object's operator method directly: ``op.__rmatmul__(y)`` for ``y @ op``.

Dynamo cannot build ``y @ op`` when ``op`` is a plain Python object (GB0055),
but it inlines a method call on the object like any other. Eagerly, ``y @ op``
runs ``Tensor.__matmul__(y, op)``, which gives up on an object torch cannot
read (``NotImplemented``), and then ``op.__rmatmul__(y)``: the call the fix
writes. For ``op @ y`` Python calls ``op.__matmul__(y)`` first and only falls
back when it returns ``NotImplemented``; a method that can is not rewritten.
"""

from __future__ import annotations

import inspect

from astroid import nodes

from graphmend_lint.analysis.operator_objects import ObjectOperator
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.host_sync import node_text, parenthesized

#: Operands whose evaluation has no side effect, so evaluating the object first changes nothing.
_PURE_OPERANDS = (nodes.Name, nodes.Attribute)


def dunder_call_fix(analysis: FileAnalysis, found: ObjectOperator) -> Fix | None:
    """``y @ op`` → ``op.__rmatmul__(y)``; ``op * y`` → ``op.__mul__(y)``. ``None`` for ``y += op`` and
    where the rewrite could change what runs: a method that may return ``NotImplemented``, or an object
    operand that is not a plain name or attribute (the call evaluates it first)."""
    if not isinstance(found.node, nodes.BinOp) or not _pure(found.obj):
        return None
    if "NotImplemented" in method_text(analysis, found.method):
        return None
    receiver = parenthesized(found.obj, node_text(analysis, found.obj))
    call = f"{receiver}.{found.method.name}({node_text(analysis, found.tensor)})"
    return Fix(
        edits=(Edit(analysis.start_of(found.node), analysis.end_of(found.node), call),),
        applicability=Applicability.UNSAFE,
        message=f"Call `{found.method.name}` directly, which Dynamo inlines",
    )


def method_text(analysis: FileAnalysis, method: nodes.FunctionDef) -> str:
    """The source of *method*, read from the file: the analysis tree keeps only the bodies compile traces."""
    lines = analysis.source.text.splitlines(keepends=True)[method.fromlineno - 1 :]
    return "".join(inspect.getblock(lines))


def _pure(node: nodes.NodeNG) -> bool:
    while isinstance(node, nodes.Attribute):
        node = node.expr
    return isinstance(node, _PURE_OPERANDS)
