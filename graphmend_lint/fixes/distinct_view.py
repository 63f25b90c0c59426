"""Give a repeated tensor argument its own object: ``t`` → ``t.view_as(t)``.

Dynamo refuses an ``autograd.Function.apply`` that receives one tensor in two
of its inputs (GB6297). A view has the same values and storage, and autograd
routes the gradient of the view's position back to ``t``, so the Function
computes what it did; only object identity differs.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix


def distinct_views_fix(analysis: FileAnalysis, repeats: list[nodes.Name]) -> Fix:
    """Each repeated name becomes a view of itself; unsafe (identity, and a tensor the linter only inferred)."""
    edits = tuple(
        Edit(analysis.start_of(name), analysis.end_of(name), f"{name.name}.view_as({name.name})") for name in repeats
    )
    return Fix(edits=edits, applicability=Applicability.UNSAFE, message="Pass a view for each repeat of the tensor")
