"""Mixture-of-experts dispatch over a data-dependent list of experts, made dense.

``hit = (...).nonzero(); for e in hit: rows = torch.where(mask[e]) ...`` runs
only the experts that received tokens, on only their tokens: two
data-dependent sizes (GB0036), and ``if e == num_experts`` on a 0-d tensor
(GB0170). Inside a loop the first break makes Dynamo run the whole function
eagerly. The graph-safe form visits every expert (``range(mask.shape[0])``,
so ``e`` is a Python int and the sentinel ``if`` compares ints), runs it on
every token, and keeps only what the tokens routed to it contribute::

    for expert_idx in range(expert_mask.shape[0]):
        if expert_idx == self.num_experts:
            continue
        token_idx = torch.arange(expert_mask.shape[-1], device=expert_mask.device)
        routed = expert_mask[expert_idx].any(0)
        current_state = torch.where(routed[:, None], hidden_states[token_idx], 0)
        ...  # the rest of the body, the weight column summed over the token's routes to the expert:
        ... * torch.where(expert_mask[expert_idx].T.bool(), top_k_weights, 0).sum(-1, keepdim=True)
        final_hidden_states.index_add_(0, token_idx, torch.where(routed[:, None], <contribution>, 0))

:func:`dense_dispatch_fix` writes it for the strictly matched transformers
loop (:mod:`graphmend_lint.fixes.expert_loop`), after proving by trial that
no rule finds a break left in the rewritten loop. It is **unsafe**: every
expert now runs on every token (``num_experts / top_k`` times the expert
FLOPs), and results are equal only within rounding (the GEMMs have more
rows). The weight is the sum of the token's routes to the expert, not the
weight at one route: a token that lists an expert twice (a hash router's
table may) gets both weights, as in the original loop, whose contribution is
linear in the weight (:func:`~graphmend_lint.fixes.expert_loop.expert_loop`
checks it); with one route the sum adds zeros, exactly. Both masks are
``torch.where``, not a product with the routed vector:
the tokens an expert does not serve enter it as zeros and leave it dropped,
so an expert that would overflow on them cannot turn the output, or a
gradient, into ``nan`` (``0 * inf``). Any other loop over the hit experts
gets a display-only description.
"""

from __future__ import annotations

from dataclasses import replace

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixer import edited_text
from graphmend_lint.fixes.expert_loop import ExpertLoop, expert_loop, hit_loop
from graphmend_lint.fixes.host_sync import node_text
from graphmend_lint.fixes.statement_lines import delete_lines, indentation_of, owns_its_lines
from graphmend_lint.fixes.torch_name import torch_name_at
from graphmend_lint.source import SourceFile

#: The rule whose fix this is: left out of the trial lint, so that a file with two loops does not recurse.
OWN_RULE = "GM401"
_ROUTED = "routed"


def dense_dispatch_fix(analysis: FileAnalysis, call: nodes.Call) -> Fix | None:
    """The dense rewrite of the loop fed by *call*, a display-only description, or ``None`` (no loop)."""
    loop = hit_loop(call)
    if loop is None:
        return None
    found = expert_loop(analysis.values, call)
    fix = _rewrite(analysis, found) if found is not None else None
    return fix or _hint(loop)


def _hint(loop: nodes.For) -> Fix:
    return Fix.advice(
        (
            f"expert dispatch loop (line {loop.lineno}): loop over `range(num_experts)` and add each expert's "
            "output on all tokens weighted by its routing mask (`torch.where(mask, weight, 0)`); not applied: "
            "only the transformers 5.x `expert_hit` loop with a row-wise body is rewritten, and the dense loop "
            "runs every expert on every token"
        ),
    )


def _rewrite(analysis: FileAnalysis, found: ExpertLoop) -> Fix | None:
    torch = torch_name_at(analysis, found.loop)
    routed = _fresh_name(found.loop.scope(), _ROUTED)
    if torch is None or routed is None or not _builtin_range(found.loop):
        return None
    statements = (found.hit, found.unpack, found.select)
    if not all(owns_its_lines(analysis, statement) for statement in statements):
        return None
    mask, expert = found.mask, found.expert
    indent = indentation_of(analysis, found.select)
    dense_selection = (
        f"{found.tokens} = {torch.name}.arange({mask}.shape[-1], device={mask}.device)\n"
        f"{indent}{routed} = {mask}[{expert}].any(0)"
    )
    keep_routed = f"{torch.name}.where({routed}[:, None], {{}}, 0)"
    weights = node_text(analysis, found.weight.value)
    summed_weight = f"{torch.name}.where({mask}[{expert}].T.bool(), {weights}, 0).sum(-1, keepdim=True)"
    contribution = node_text(analysis, found.contribution)
    weight_text = node_text(analysis, found.weight)
    if any(parent is found.contribution for parent in found.weight.node_ancestors()):
        if contribution.count(weight_text) != 1:
            return None
        contribution = contribution.replace(weight_text, summed_weight)
        weight_edits: tuple[Edit, ...] = ()
    else:
        weight_edits = (Edit(analysis.start_of(found.weight), analysis.end_of(found.weight), summed_weight),)
    edits = (
        *torch.edits,
        delete_lines(found.hit),
        Edit(analysis.start_of(found.loop.iter), analysis.end_of(found.loop.iter), f"range({mask}.shape[0])"),
        delete_lines(found.unpack),
        Edit(analysis.start_of(found.select), analysis.end_of(found.select), dense_selection),
        *(_wrapped(analysis, rows, keep_routed) for rows in found.token_rows),
        *weight_edits,
        Edit(analysis.start_of(found.contribution), analysis.end_of(found.contribution),
             keep_routed.format(contribution)),
    )
    if not _loop_traces_whole(analysis, found.loop, edits):
        return None
    return Fix(
        edits=edits,
        applicability=Applicability.UNSAFE,
        message=(
            f"Run every expert on every token (`range({mask}.shape[0])`) and keep the routed tokens' "
            f"rows and contributions (`torch.where({routed}[:, None], ...)`): no data-dependent size left, at "
            "num_experts/top_k times the expert FLOPs"
        ),
    )


def _wrapped(analysis: FileAnalysis, node: nodes.NodeNG, template: str) -> Edit:
    """Replace *node* by *template* with the node's own text in its ``{}``."""
    return Edit(analysis.start_of(node), analysis.end_of(node), template.format(node_text(analysis, node)))


def _fresh_name(function: nodes.NodeNG, preferred: str) -> str | None:
    """*preferred*, or it with a numeric suffix, when the function neither binds nor reads it."""
    used = {n.name for n in function.nodes_of_class((nodes.Name, nodes.AssignName))}
    return next((name for name in (preferred, *(f"{preferred}_{i}" for i in range(1, 10))) if name not in used), None)


def _builtin_range(node: nodes.NodeNG) -> bool:
    """``range`` means the builtin where *node* is (no module or local binding shadows it)."""
    try:
        _, bindings = node.scope().scope_lookup(node, "range")
    except Exception:  # an astroid lookup failure: nothing is known
        return False
    return all(binding.root().name == "builtins" for binding in bindings)


def _loop_traces_whole(analysis: FileAnalysis, loop: nodes.For, edits: tuple[Edit, ...]) -> bool:
    """No rule (but this one, which the trial must not re-enter) finds a break in the rewritten loop.

    Proven by trial: the edited text is linted as this file, about the loop's
    function only (:meth:`FileAnalysis.trial_around`).
    The dense loop costs num_experts/top_k times the FLOPs; it is only worth
    it when the loop then traces whole.
    """
    source = analysis.source
    candidate = SourceFile(edited_text(source, edits), source.encoding, source.bom)
    settings = replace(analysis.settings, select=("ALL",), extend_select=(), ignore=(OWN_RULE,), per_file_ignores=())
    first, last = (_moved_line(line, edits) for line in (loop.lineno, (loop.end_lineno or loop.lineno) + 1))
    return not any(first <= d.start.line < last for d in analysis.trial_around(loop, candidate, settings))


def _moved_line(line: int, edits: tuple[Edit, ...]) -> int:
    """Where the start of *line* lands once *edits* (none of which spans it) are made."""
    shift = 0
    for edit in edits:
        if edit.end.line < line or (edit.end.line == line and edit.end.col == 0):
            shift += edit.content.count("\n") - (edit.end.line - edit.start.line)
    return line + shift
