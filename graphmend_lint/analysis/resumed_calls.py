"""The tensor-method call a data-dependent-shape break interrupts, which Dynamo logs a second time.

When ``h[mask]`` or ``m.nonzero()`` breaks the graph while Dynamo is
evaluating the arguments of a tensor method (``h.masked_scatter(...)``,
``h.index_select(...)``), the method was already looked up in the graph
that ended; the resumed frame calls it and Dynamo logs a second break,
GB0007 "Attempted to call function marked as skipped", at the line the
call starts on (measured, torch 2.13: Higgs Audio v2's
``hidden_states.masked_scatter(\\n ..., norm(hidden_states[mask]))``). A torch
function (``torch.add(h, h[m].sum())``), a module call, or an ``.item()``
break inside a method's arguments logs no such second break.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.values import ValueOracle


def interrupted_method_call(values: ValueOracle, node: nodes.NodeNG) -> nodes.Call | None:
    """The outermost tensor-method call of *node*'s statement whose arguments hold *node*, on an earlier line."""
    found: nodes.Call | None = None
    child, parent = node, node.parent
    while parent is not None and not parent.is_statement:
        if (
            isinstance(parent, nodes.Call)
            and child is not parent.func
            and isinstance(parent.func, nodes.Attribute)
            and values.is_tensor(parent.func.expr)
            and parent.lineno < node.lineno
        ):
            found = parent
        child, parent = parent, parent.parent
    return found
