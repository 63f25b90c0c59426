"""Keep a converted buffer in a local instead of writing it back to the module.

``self.pos = self.pos.to(x.dtype)`` in ``forward`` re-registers the buffer on
every call. ``pos = self.pos.to(x.dtype)``, with the later reads of
``self.pos`` in the same function reading ``pos``, computes the same values
without touching the module.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix


def _self_attribute(node: nodes.NodeNG, name: str) -> bool:
    return isinstance(node, (nodes.Attribute, nodes.AssignAttr)) and node.attrname == name and (
        isinstance(node.expr, nodes.Name) and node.expr.name == "self"
    )


def local_rebinding_fix(analysis: FileAnalysis, statement: nodes.Assign, target: nodes.AssignAttr) -> Fix | None:
    """``self.X = <value>`` → ``X = <value>``, and every later ``self.X`` read in the function → ``X``.

    Offered when the statement is a top-level statement of its function (so
    every later read sees the local), the function assigns ``self.X`` nowhere
    else and never uses the name ``X``. Unsafe: the module keeps its old
    buffer (the dtype/device it was created with), which ``state_dict()``,
    other methods and the next call see; the conversion now runs on every
    call instead of only the first.
    """
    function = statement.parent
    name = target.attrname
    if not isinstance(function, nodes.FunctionDef) or statement not in function.body:
        return None
    if any(n.name == name for n in function.nodes_of_class((nodes.Name, nodes.AssignName))):
        return None  # the local name is taken
    writes = [n for n in function.nodes_of_class(nodes.AssignAttr) if _self_attribute(n, name)]
    if writes != [target]:
        return None
    edits = [Edit(analysis.start_of(target), analysis.end_of(target), name)]
    for read in function.nodes_of_class(nodes.Attribute):
        if _self_attribute(read, name) and read.lineno > statement.tolineno:
            edits.append(Edit(analysis.start_of(read), analysis.end_of(read), name))
    return Fix(
        edits=tuple(edits),
        applicability=Applicability.UNSAFE,
        message=f"Keep the converted buffer in a local `{name}` instead of re-registering `self.{name}`",
    )
