"""What a name is assigned, and what a list built by appending holds: facts read off the bindings alone.

These sit below the value oracle (:mod:`~graphmend_lint.analysis.values`) and the host-value helpers
(:mod:`~graphmend_lint.analysis.host_values`), which both ask them, so they import neither.
"""

from __future__ import annotations

from astroid import nodes
from astroid.const import Context

from graphmend_lint.analysis.lookup import reaching_bindings

_APPENDED_ATTRIBUTE = "_graphmend_appended_items"


def bound_values(name: nodes.Name) -> list[nodes.NodeNG] | None:
    """The expressions assigned to *name* (``None`` when any binding is not a plain assignment).

    Unpacking (``a, b = x.shape``), loops and parameters are not plain
    assignments; :func:`~graphmend_lint.analysis.host_values.unpacked_from` covers the first.
    """
    try:
        assignments = reaching_bindings(name)
    except Exception:
        return None
    if not assignments:
        return None
    result: list[nodes.NodeNG] = []
    for assignment in assignments:
        parent = assignment.parent if isinstance(assignment, nodes.AssignName) else None
        if not isinstance(parent, (nodes.Assign, nodes.AnnAssign, nodes.NamedExpr)) or parent.value is None:
            return None
        result.append(parent.value)
    return result


def appended_items(node: nodes.NodeNG) -> list[nodes.NodeNG] | None:
    """What the list *node* names holds when it is built by ``items = []`` (or a literal) and ``append`` alone:
    the literal's items and every appended value (Point-MAE stacks ``mask_idx.append(mask.bool())``);
    ``None`` when any other use could add something else (``extend``, ``insert``, ``+=``, an item store,
    another binding). *node* is itself one of the uses allowed: an item read or a call's argument."""
    if not isinstance(node, nodes.Name):
        return None
    bound = bound_values(node)
    if bound is None or len(bound) != 1 or not isinstance(bound[0], nodes.List):
        return None
    # one walk of the function per list: every read of it asks the same question
    known: dict[str, list[nodes.NodeNG] | None] = getattr(bound[0], _APPENDED_ATTRIBUTE, None) or {}
    if node.name not in known:
        known[node.name] = _appended_to(bound[0], node.name, node.scope())
        setattr(bound[0], _APPENDED_ATTRIBUTE, known)
    found = known[node.name]
    return None if found is None else list(found)


def _appended_to(literal: nodes.List, name: str, scope: nodes.NodeNG) -> list[nodes.NodeNG] | None:
    """*literal*'s items and what *scope* appends to *name*, when every read of *name* there appends,
    reads an item or passes the list to a call; ``None`` otherwise."""
    items = list(literal.elts)
    for read in scope.nodes_of_class(nodes.Name):
        if read.name != name:
            continue
        parent = read.parent
        if isinstance(parent, nodes.Attribute) and parent.expr is read:
            call = parent.parent
            if parent.attrname != "append" or not isinstance(call, nodes.Call) or len(call.args) != 1:
                return None
            items.append(call.args[0])
        elif not (isinstance(parent, nodes.Call) and read in parent.args or _item_read(parent, read)):
            return None  # an alias, an item store, a loop over it...: not provably only appended to
    return items


def _item_read(parent: nodes.NodeNG, read: nodes.Name) -> bool:
    return isinstance(parent, nodes.Subscript) and parent.value is read and parent.ctx is Context.Load
