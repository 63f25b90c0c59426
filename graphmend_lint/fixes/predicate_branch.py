"""GM101's rewrite of a tensor ``if``: which predication applies, decided in one place.

* ``if S and T:`` where ``S`` is a Python condition Dynamo specialises on
  (``x.dtype == torch.float16``, ``self.training``) keeps ``if S:`` and selects
  on ``T`` inside it: ``S`` still short-circuits ``T``.
* Branches whose values call submodules or user code become ``torch.cond``
  (:mod:`.predicate_cond`), so only the taken side runs. When a branch holds
  nested control flow, ``torch.cond`` cannot take it, but computing both sides
  is still correct when those calls are free of effects (Phi-3's LongRoPE).
* ``if c: x[mask] = v`` folds ``c`` into the mask under compile and keeps the
  eager code (:mod:`.predicate_masked`).
* LayerDrop (``if torch.rand([]) < p: continue`` and its flag forms) keeps its
  eager code and selects with ``torch.where`` under compile
  (:mod:`.predicate_layerdrop`); a flag form it cannot prove falls through.
* Everything else is a ``torch.where`` select (:meth:`.Predicator.where_rewrite`).

This module sits above both rewrites, so neither imports the other.
"""

from __future__ import annotations

from dataclasses import replace

from astroid import nodes

from graphmend_lint.analysis.values import Kind
from graphmend_lint.fixes.predicate import Declined, Predicator, Rewrite, wrap_long_call
from graphmend_lint.fixes.predicate_cond import NestedControlFlow, callee_effect, cond_rewrite, needs_cond
from graphmend_lint.fixes.predicate_layerdrop import LayerDropDeclined, is_layerdrop, layerdrop_rewrite
from graphmend_lint.fixes.predicate_masked import masked_fill, masked_fill_rewrite

BOTH_SIDES_MESSAGE = (
    "Select with `torch.where` (both branches are computed, including the calls `torch.cond` could not take)"
)


def if_statement(predicator: Predicator, node: nodes.If) -> Rewrite:
    """The rewrite of a tensor-dependent ``if`` (assignments, updates or returns, LayerDrop's ``continue``)."""
    if is_layerdrop(node):
        try:
            return layerdrop_rewrite(predicator, node)
        except LayerDropDeclined:
            raise  # the draw is LayerDrop's: its reason is the one to show
        except Declined:
            if isinstance(node.body[0], nodes.Continue):
                raise  # nothing else rewrites a `continue`
    target = masked_fill(node)
    if target is not None:
        return masked_fill_rewrite(predicator, node, target)
    guard, tensor_test = static_guard(predicator, node.test)
    if guard:
        return _guarded_where(predicator, node, guard, tensor_test)
    if not needs_cond(predicator, node):
        return predicator.where_rewrite(node)
    try:
        return cond_rewrite(predicator, node)
    except NestedControlFlow as cond_reason:
        effect = callee_effect(predicator, node)
        if effect is not None:
            raise Declined(f"{cond_reason}; and both sides cannot run: {effect}") from None
        try:
            rewrite = predicator.where_rewrite(node)
        except Declined as where_reason:
            raise Declined(f"{cond_reason}; and `torch.where`: {where_reason}") from None
        return replace(rewrite, safe=False, message=BOTH_SIDES_MESSAGE)


def static_guard(predicator: Predicator, test: nodes.NodeNG) -> tuple[list[nodes.NodeNG], list[nodes.NodeNG]]:
    """``S1 and S2 and T...``: the operands Dynamo specialises on, and the tensor rest.

    The leading Python operands stay in front; a later one joins them only
    when it has no calls, so that testing it first changes nothing (``and`` of
    pure operands is the same in any order).
    """
    if not (isinstance(test, nodes.BoolOp) and test.op == "and"):
        return [], [test]
    operands = list(test.values)
    static: list[nodes.NodeNG] = []
    while operands and predicator.values.kind(operands[0]) is Kind.STATIC:
        static.append(operands.pop(0))
    movable = [op for op in operands if predicator.values.kind(op) is Kind.STATIC and not _has_call(op)]
    static += movable
    operands = [op for op in operands if op not in movable]
    return (static, operands) if static and operands else ([], [test])


def _guarded_where(predicator: Predicator, node: nodes.If, guard: list[nodes.NodeNG], tensor_test: list[nodes.NodeNG]) -> Rewrite:
    """``if S and T: body`` → ``if S:`` then the select on ``T``."""
    if node.orelse:
        raise Declined("the `if` mixes Python and tensor conditions and has an `else`, which both would need")
    if needs_cond(predicator, node):
        raise Declined(
            "the branch calls submodules or user code, and the Python part of the condition keeps it "
            "from becoming `torch.cond`"
        )
    unset = _none_under_guard(node, guard)
    if unset is not None:
        raise Declined(f"the Python part of the condition says `{unset}` is None, and `torch.where` keeps its old value")
    parts = [predicator.condition(part) for part in tensor_test]
    condition = " & ".join(predicator.parenthesised(part) for part in parts) if len(parts) > 1 else parts[0]
    inner, safe = predicator.assignments(node, condition)
    lines = [f"if {' and '.join(predicator.text(part) for part in guard)}:"]
    lines += ["    " + line for statement in inner for line in wrap_long_call(statement).split("\n")]
    return predicator.statement_rewrite(node, node, lines, safe)


def _none_under_guard(node: nodes.If, guard: list[nodes.NodeNG]) -> str | None:
    """A name the body assigns that a guard operand tests ``is None``: under the guard its old value, the one
    ``torch.where`` would keep where the tensor test is false, is ``None`` (metaseq's ``if mask is None and
    tokens.eq(pad).any(): mask = tokens.eq(pad)``)."""
    assigned = {target.name for statement in node.body for target in statement.nodes_of_class(nodes.AssignName)}
    for operand in guard:
        if (
            isinstance(operand, nodes.Compare)
            and isinstance(operand.left, nodes.Name)
            and operand.left.name in assigned
            and len(operand.ops) == 1
            and operand.ops[0][0] == "is"
            and isinstance(operand.ops[0][1], nodes.Const)
            and operand.ops[0][1].value is None
        ):
            return operand.left.name
    return None


def _has_call(node: nodes.NodeNG) -> bool:
    return isinstance(node, nodes.Call) or any(True for _ in node.nodes_of_class(nodes.Call))
