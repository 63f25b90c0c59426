"""The finding GM301 and GM401 report once their capture setting is on.

Under ``capture_scalar_outputs`` (GM301, ``t.item()``) or
``capture_dynamic_output_shape_ops`` (GM401, ``x.nonzero()``) Dynamo traces the
capture itself, and the graph breaks only where Python branches on the captured
value (:mod:`graphmend_lint.analysis.captured_values`). Both rules then report
that branch in the same words, naming the capture's line and the setting so the
user sees why the finding moved there; this module writes that report once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from astroid import nodes

from graphmend_lint.analysis.captured_values import captured_branches
from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix


def report_captured_branches(
    ctx: RuleContext,
    origin_of: Callable[[nodes.NodeNG], nodes.NodeNG | None],
    captured: str,
    setting: str,
    fix: Fix,
) -> Iterator[Diagnostic]:
    """A finding, carrying *fix*, at each branch operand whose value *origin_of* traces to a capture.

    *captured* says what the operand is (``"a scalar captured from a tensor"``);
    *setting* is the ``torch._dynamo.config`` switch that made it a capture.
    """
    for operand, traced, origin in captured_branches(ctx.analysis, origin_of):
        message = f"branch on `{snippet(operand)}`, {captured} (line {origin.lineno}, {setting}): graph break"
        yield ctx.report(operand, message, traced, fix)
