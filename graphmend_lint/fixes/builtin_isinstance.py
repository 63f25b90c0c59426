"""``torch.jit.isinstance(x, T)`` → ``isinstance(x, T)`` where the two agree.

``torch.jit.isinstance`` lives in ``torch.jit``, a module Dynamo skips: the
call breaks the graph (GB0007, measured on torch 2.13), while the builtin
``isinstance`` is folded on the argument's type and breaks nothing. Eagerly,
``torch.jit.isinstance`` checks a plain type with the builtin itself
(``torch/_jit_internal.py``: ``_isinstance`` ends in ``isinstance(obj,
target_type)``); only container types (``List[int]``, ``Dict[str, Tensor]``)
get a check of their own, and bare ``list`` / ``List`` / ``Optional`` raise.
TorchScript refines a ``Union`` through the builtin as well. So the rewrite
is offered, as safe, only when the type is one the two answer alike: a
builtin scalar type, ``torch.Tensor``, or a class of this file, alone or in
a tuple.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.values import ValueOracle
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix

#: Types ``torch.jit.isinstance`` checks with the builtin ``isinstance``.
_PLAIN_TYPES = frozenset({"int", "float", "bool", "str", "complex", "bytes", "torch.Tensor"})
BUILTIN = "isinstance"


def _is_plain_type(values: ValueOracle, node: nodes.NodeNG) -> bool:
    if isinstance(node, nodes.Tuple):
        return bool(node.elts) and all(_is_plain_type(values, element) for element in node.elts)
    name = values.qualified_name(node)
    if name in _PLAIN_TYPES:
        imported = not isinstance(node, nodes.Name) or name != node.name  # ``torch.Tensor``, ``Tensor`` from torch
        return imported or _lookup_is_builtin(node, node.name)
    if isinstance(node, nodes.Name):
        try:
            _, bindings = node.lookup(node.name)
        except Exception:  # astroid lookups can fail on odd code: no provable class
            return False
        return len(bindings) == 1 and isinstance(bindings[0], nodes.ClassDef)
    return False


def _lookup_is_builtin(node: nodes.NodeNG, name: str) -> bool:
    """*name*, read where *node* stands, is the builtin of that name (nothing in the file rebinds it)."""
    try:
        scope, _ = node.scope().lookup(name)
    except Exception:  # astroid lookups can fail on odd code: not provably the builtin
        return False
    return scope.root().name == "builtins"


def builtin_isinstance_fix(analysis: FileAnalysis, values: ValueOracle, call: nodes.Call) -> Fix | None:
    """The rewrite of ``torch.jit.isinstance(x, T)``'s callee to ``isinstance``, when ``T`` is a plain type."""
    if not isinstance(call.func, nodes.Attribute) or len(call.args) != 2 or call.keywords:
        return None
    if not _is_plain_type(values, call.args[1]) or not _lookup_is_builtin(call, BUILTIN):
        return None
    return Fix(
        edits=(Edit(analysis.start_of(call.func), analysis.end_of(call.func), BUILTIN),),
        applicability=Applicability.SAFE,
        message="Use the builtin `isinstance`: it checks a plain type the same way and Dynamo folds it",
    )
