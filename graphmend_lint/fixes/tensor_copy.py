"""Copies Dynamo traces: ``t.detach().clone()`` for ``copy.deepcopy(t)``, ``c.copy()`` for ``copy.copy(c)``.

``copy.deepcopy`` of a tensor that does not require grad is a fresh tensor
with the same values, dtype, device and (dense) layout, and no autograd
history: exactly ``t.detach().clone()``, which Dynamo traces. ``copy.copy``
of an exact list, dict or set calls that type's ``copy`` method, which
Dynamo traces when called directly.
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


def container_copy_fix(analysis: FileAnalysis, call: nodes.Call, container: nodes.NodeNG) -> Fix:
    """``copy.copy(c)`` → ``c.copy()`` for a list, dict or set: what ``copy.copy`` calls for those types. Safe."""
    receiver = parenthesized(container, node_text(analysis, container))
    return Fix(
        edits=(Edit(analysis.start_of(call), analysis.end_of(call), f"{receiver}.copy()"),),
        applicability=Applicability.SAFE,
        message="Copy with the container's own `.copy()`, which Dynamo traces",
    )
