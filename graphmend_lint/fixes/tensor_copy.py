"""Copy a tensor in the graph: ``t.detach().clone()`` for ``copy.deepcopy(t)``.

``copy.deepcopy`` of a tensor that does not require grad is a fresh tensor
with the same values, dtype, device and (dense) layout, and no autograd
history: exactly ``t.detach().clone()``, which Dynamo traces.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.host_sync import node_text, parenthesized


def detach_clone_fix(analysis: FileAnalysis, call: nodes.Call, tensor: nodes.NodeNG) -> Fix:
    """``copy.deepcopy(t)`` → ``t.detach().clone()``.

    Unsafe: for a leaf that requires grad, ``deepcopy`` makes a new leaf that
    requires grad, ``detach().clone()`` one that does not; Python attributes
    set on the tensor object, and a tensor subclass's own ``__deepcopy__``,
    are not carried over.
    """
    receiver = parenthesized(tensor, node_text(analysis, tensor))
    return Fix(
        edits=(Edit(analysis.start_of(call), analysis.end_of(call), f"{receiver}.detach().clone()"),),
        applicability=Applicability.UNSAFE,
        message="Copy with `.detach().clone()`, which Dynamo traces",
    )
