"""Reduce over a boolean mask without materialising the masked tensor.

``x[mask]`` has as many elements as ``mask`` has ``True`` values, which only
the device knows, so Dynamo breaks the graph (GB0036). When the selection is
only reduced, the reduction can run over the whole tensor with the unselected
elements replaced by the reduction's identity:

=================  =================================================
``x[m].sum()``     ``torch.where(m, x, 0).sum()``
``x[m].mean()``    ``(torch.where(m, x, 0).sum() / m.sum())``
``x[m].max()``     ``torch.where(m, x, -torch.inf).max()`` (float x)
``x[m].min()``     ``torch.where(m, x, torch.inf).min()`` (float x)
=================  =================================================

``torch.where`` broadcasts from the right, ``x[m]`` indexes from the left, so
the two agree only when ``m`` has ``x``'s shape; the fix is applicable only
when the mask is provably elementwise in ``x`` (``x > 0``, ``~torch.isnan(x)``)
and display-only otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.host_values import is_bool_tensor, is_float_tensor, method_call
from graphmend_lint.analysis.values import Kind, ValueOracle
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.torch_name import torch_name_at
from graphmend_lint.fixes.host_sync import node_text

REDUCTIONS = ("sum", "mean", "max", "min")
#: torch functions that map a tensor to a same-shaped tensor, element by element.
_ELEMENTWISE_FUNCTIONS = frozenset(
    {"isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "abs", "logical_not", "logical_and",
     "logical_or", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge"}
)  # fmt: skip
#: Parents in which ``a / b`` needs no parentheses.
_LOOSE_PARENTS = (nodes.Assign, nodes.AnnAssign, nodes.Return, nodes.Expr, nodes.Keyword, nodes.Tuple, nodes.List)
_MAX_DEPTH = 8


@dataclass(frozen=True)
class MaskedReduction:
    """``<tensor>[<mask>].<reduction>()``."""

    call: nodes.Call
    subscript: nodes.Subscript
    reduction: str

    @property
    def tensor(self) -> nodes.NodeNG:
        return self.subscript.value

    @property
    def mask(self) -> nodes.NodeNG:
        return self.subscript.slice


def masked_reduction(values: ValueOracle, subscript: nodes.Subscript) -> MaskedReduction | None:
    """*subscript* (``x[mask]``) as the receiver of an argument-less ``sum/mean/max/min``."""
    parent = subscript.parent
    if not (isinstance(parent, nodes.Attribute) and parent.expr is subscript):
        return None
    call = method_call(parent.parent, *REDUCTIONS)
    if call is None or call.func is not parent or call.args or call.keywords:
        return None
    if not is_bool_tensor(values, subscript.slice):
        return None
    return MaskedReduction(call, subscript, parent.attrname)


def _same_expression(analysis: FileAnalysis, a: nodes.NodeNG, b: nodes.NodeNG) -> bool:
    """Same text, and plain enough (names, attributes) that the same text is the same value."""
    plain = (nodes.Name, nodes.Attribute)
    if not (isinstance(a, plain) and isinstance(b, plain)):
        return False
    if any(not isinstance(n, plain) for n in (*a.nodes_of_class(nodes.NodeNG), *b.nodes_of_class(nodes.NodeNG))):
        return False
    if node_text(analysis, a) != node_text(analysis, b):
        return False
    if isinstance(a, nodes.Name):
        try:  # the same binding, not a rebinding between the two reads
            return a.lookup(a.name)[1] == b.lookup(b.name)[1] and len(a.lookup(a.name)[1]) == 1
        except Exception:
            return False
    return True


def mask_matches_shape(analysis: FileAnalysis, mask: nodes.NodeNG, tensor: nodes.NodeNG, depth: int = 0) -> bool:
    """True when *mask* is computed element by element from *tensor* (so has its shape).

    Leaves must be *tensor* itself or static values (Python numbers); the ops
    comparisons, ``~ & | ^``, arithmetic and elementwise torch functions; a name
    is followed to its single assignment.
    """
    values = analysis.values
    if depth > _MAX_DEPTH:
        return False
    again = lambda child: mask_matches_shape(analysis, child, tensor, depth + 1)  # noqa: E731
    if _same_expression(analysis, mask, tensor):
        return True
    if isinstance(mask, nodes.Compare):
        return len(mask.ops) == 1 and _elementwise_operands(values, [mask.left, mask.ops[0][1]], again)
    if isinstance(mask, nodes.BinOp):
        return _elementwise_operands(values, [mask.left, mask.right], again)
    if isinstance(mask, nodes.UnaryOp) and mask.op in {"~", "-"}:
        return again(mask.operand)
    if isinstance(mask, nodes.Call):
        name = values.qualified_name(mask.func) or ""
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in _ELEMENTWISE_FUNCTIONS and not mask.keywords:
            return _elementwise_operands(values, mask.args, again)
        return False
    if isinstance(mask, nodes.Name):
        bound = bound_values(mask)
        return bound is not None and len(bound) == 1 and again(bound[0])
    return False


def _elementwise_operands(
    values: ValueOracle, operands: list[nodes.NodeNG], again: Callable[[nodes.NodeNG], bool]
) -> bool:
    """Each operand is static, or itself shaped like the tensor; at least one is the latter."""
    shaped = [operand for operand in operands if values.kind(operand) is not Kind.STATIC]
    return bool(shaped) and all(again(operand) for operand in shaped)


def _needs_parentheses(node: nodes.NodeNG) -> bool:
    parent = node.parent
    if isinstance(parent, nodes.Call):
        return node is parent.func
    return not isinstance(parent, _LOOSE_PARENTS)


def _replacement(analysis: FileAnalysis, found: MaskedReduction, torch_name: str) -> str | None:
    mask, tensor = node_text(analysis, found.mask), node_text(analysis, found.tensor)

    def where(identity: str) -> str:
        return f"{torch_name}.where({mask}, {tensor}, {identity})"

    if found.reduction == "sum":
        return f"{where('0')}.sum()"
    if found.reduction == "mean":
        if not isinstance(found.mask, (nodes.Name, nodes.Attribute)):
            return None  # the mask is read twice; only a name is certainly free to repeat
        text = f"{where('0')}.sum() / {mask}.sum()"
        return f"({text})" if _needs_parentheses(found.call) else text
    sign = "-" if found.reduction == "max" else ""
    return f"{where(f'{sign}{torch_name}.inf')}.{found.reduction}()"


def masked_reduction_fix(analysis: FileAnalysis, found: MaskedReduction) -> Fix | None:
    """The rewrite of one masked reduction; display-only when it cannot be proven equal.

    Unsafe even when proven: floating sums are added in another order (equal
    within rounding), ``mean`` of an integer tensor no longer raises, and
    ``max``/``min`` of an empty selection give ``∓inf`` instead of raising.
    ``sum`` and ``mean`` of an empty selection agree (``0`` and ``nan``).
    """
    torch = torch_name_at(analysis, found.call)
    if torch is None or any(isinstance(n, (nodes.NamedExpr, nodes.Starred)) for n in (found.mask, found.tensor)):
        return None
    replacement = _replacement(analysis, found, torch.name)
    if replacement is None:
        return None
    edits = (*torch.edits, Edit(analysis.start_of(found.call), analysis.end_of(found.call), replacement))
    problems = []
    if not mask_matches_shape(analysis, found.mask, found.tensor):
        problems.append("the mask is not provably shaped like the tensor")
    if found.reduction in {"max", "min"} and not is_float_tensor(analysis.values, found.tensor):
        problems.append(f"`{found.reduction}` needs a floating tensor for an infinite identity")
    if problems:
        return Fix(
            edits=edits,
            applicability=Applicability.DISPLAY_ONLY,
            message=f"Reduce with `torch.where` (not applied: {'; '.join(problems)})",
        )
    empty = "gives ∓inf instead of raising" if found.reduction in {"max", "min"} else "agrees"
    return Fix(
        edits=edits,
        applicability=Applicability.UNSAFE,
        message=f"Reduce over `torch.where` instead of the masked selection (an empty selection {empty})",
    )
