"""Index with a 0-d tensor without leaving the device: ``x.index_select(0, i.reshape(1)).squeeze(0)``.

``x[i]`` with a 0-d integer tensor ``i`` calls ``i.__index__()``, which copies
``i`` to a Python int (a host sync, and a graph break under Dynamo). Gathering
row ``i`` with ``index_select`` keeps ``i`` a tensor: ``i.reshape(1)`` is a
one-element index, and ``squeeze(0)`` drops the dimension it adds, so the
result has the shape, dtype and values of ``x[i]``.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.host_sync import node_text, parenthesized


def index_select_fix(analysis: FileAnalysis, subscript: nodes.Subscript, index: nodes.NodeNG) -> Fix:
    """``x[i]`` → ``x.index_select(0, i.reshape(1)).squeeze(0)``.

    Unsafe: ``x[i]`` is a view of ``x`` and the gather is a copy, so an
    in-place write through the result no longer reaches ``x``; an index out
    of range raises ``RuntimeError`` instead of ``IndexError``. Offered only
    for indices that cannot be negative (``argmax``/``argmin`` results):
    ``x[-1]`` is the last row, ``index_select`` rejects ``-1``.
    """
    tensor = parenthesized(subscript.value, node_text(analysis, subscript.value))
    row = parenthesized(index, node_text(analysis, index))
    content = f"{tensor}.index_select(0, {row}.reshape(1)).squeeze(0)"
    return Fix(
        edits=(Edit(analysis.start_of(subscript), analysis.end_of(subscript), content),),
        applicability=Applicability.UNSAFE,
        message="Gather the row with `index_select` instead of indexing with a 0-d tensor",
    )
