"""Mixture-of-experts dispatch over a data-dependent list of experts: explained, not rewritten.

``hit = (...).nonzero(); for e in hit: rows = torch.where(mask[e]) ...`` runs
only the experts that received tokens, on only their tokens. The graph-safe
form loops over ``range(num_experts)`` and weights every expert's output on
every token by its routing mask. That is equal only when the loop body is a
pure per-token map whose result is scattered back by the same rows, which
the linter cannot prove for a general loop body, so the rewrite is shown as a
precise message and never applied.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.host_values import reads_of, single_target
from graphmend_lint.diagnostics import Applicability, Fix


def dispatch_loop(call: nodes.Call) -> nodes.For | None:
    """The ``for`` loop iterating the experts that *call* (``hit = ....nonzero()``) selected."""
    target = single_target(call)
    for read in (reads_of(target) or ()) if target is not None else ():
        loop = read.parent
        if isinstance(loop, nodes.For) and loop.iter is read:
            return loop
    return None


def dense_dispatch_hint(call: nodes.Call) -> Fix | None:
    """A display-only fix describing the dense loop, when *call* feeds an expert loop."""
    loop = dispatch_loop(call)
    if loop is None:
        return None
    return Fix(
        edits=(),
        applicability=Applicability.DISPLAY_ONLY,
        message=(
            f"expert dispatch loop (line {loop.lineno}): loop over `range(num_experts)` and add each expert's "
            "output on all tokens weighted by its routing mask (`torch.where(mask, weight, 0)`); not applied: "
            "equality with the sparse loop is not provable here, and the dense loop runs every expert on every token"
        ),
    )
