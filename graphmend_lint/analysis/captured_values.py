"""Where a value Dynamo captured symbolically decides a branch.

With ``capture_scalar_outputs`` Dynamo traces ``s = t.item()`` as an unbacked
symbol instead of breaking; with ``capture_dynamic_output_shape_ops`` it
traces ``idx = x.nonzero()`` with an unbacked size. Arithmetic on those
stays in the graph, but Python cannot branch on a symbol: ``if s > 0:`` and
``if len(idx) == 0:`` still break (GB0170, measured on torch 2.13), at the
branch instead of at the conversion. These helpers find, in a condition
operand, the captured value it depends on, through local names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from astroid import nodes

from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.host_values import condition_operands, unpacked_from
from graphmend_lint.analysis.walk import size_receiver

if TYPE_CHECKING:
    from graphmend_lint.analysis.scope import TracedFunction
    from graphmend_lint.context import FileAnalysis

_MAX_DEPTH = 4


#: Answers already found for a name at a depth, for one stateless origin test (see :func:`captured_origin`).
OriginMemo = dict[tuple[nodes.Name, int], "nodes.NodeNG | None"]


def _origin(
    expression: nodes.NodeNG, is_origin: Callable[[nodes.NodeNG], bool], depth: int, memo: OriginMemo | None = None
) -> nodes.NodeNG | None:
    """The first sub-expression of *expression* for which *is_origin* holds, following names to their values."""
    if depth > _MAX_DEPTH:
        return None
    for node in [expression, *expression.nodes_of_class((nodes.Call, nodes.Subscript, nodes.Name))]:
        if is_origin(node):
            return node
        if isinstance(node, nodes.Name):
            found = _name_origin(node, is_origin, depth, memo)
            if found is not None:
                return found
    return None


def _name_origin(
    name: nodes.Name, is_origin: Callable[[nodes.NodeNG], bool], depth: int, memo: OriginMemo | None
) -> nodes.NodeNG | None:
    """The origin one of *name*'s assigned values is computed from."""
    if memo is not None and (name, depth) in memo:
        return memo[(name, depth)]
    found = next(
        (origin for value in bound_values(name) or _unpacked_sizes(name)
         if (origin := _origin(value, is_origin, depth + 1, memo)) is not None),
        None,
    )  # fmt: skip
    if memo is not None:
        memo[(name, depth)] = found
    return found


def _unpacked_sizes(name: nodes.Name) -> list[nodes.NodeNG]:
    """``t.shape`` for ``n, d = t.shape`` (or ``t.size()``): each element is one of ``t``'s sizes, as
    unbacked as ``t``'s. Mistral's ``N_txt, D_txt = text_features.shape`` of a masked read, then
    ``assert seq_len == N_txt + N_img, f"..."``, still breaks with ``capture_dynamic_output_shape_ops`` on
    (GB0170: an assert with a formatted message is not turned into a runtime check, measured). Other
    unpacked values are not followed: which element a name takes is not known."""
    return [value for value in unpacked_from(name) or () if size_receiver(value) is not None]


def captured_origin(
    expression: nodes.NodeNG, is_capture: Callable[[nodes.NodeNG], bool], memo: OriginMemo | None = None
) -> nodes.NodeNG | None:
    """The conversion (``t.item()``...) *expression* is computed from, if any.

    A caller asking about many expressions with one *is_capture* whose answers never change may pass
    a *memo* it keeps: a name read in many expressions is then followed once per depth."""
    return _origin(expression, is_capture, 0, memo)


def dynamic_size_origin(
    expression: nodes.NodeNG, is_dynamic: Callable[[nodes.NodeNG], bool]
) -> nodes.NodeNG | None:
    """The data-dependent-shape result whose *size* *expression* reads (``len(idx)`` with ``idx = x.nonzero()``)."""
    for node in [expression, *expression.nodes_of_class((nodes.Call, nodes.Attribute))]:
        receiver = size_receiver(node)
        if receiver is not None:
            found = _origin(receiver, is_dynamic, 0)
            if found is not None:
                return found
    return None


def branch_operands(analysis: FileAnalysis) -> Iterator[tuple[nodes.NodeNG, TracedFunction]]:
    """Every operand an ``if``, ``while`` or conditional expression in traced code jumps on."""
    for node, traced in analysis.traced_nodes(nodes.If, nodes.While, nodes.IfExp):
        for operand in condition_operands(node.test):
            yield operand, traced


def captured_branches(
    analysis: FileAnalysis, origin_of: Callable[[nodes.NodeNG], nodes.NodeNG | None]
) -> Iterator[tuple[nodes.NodeNG, TracedFunction, nodes.NodeNG]]:
    """``(operand, traced, origin)`` for each branch operand whose captured origin *origin_of* finds.

    Under a capture setting the break moves from the capture to the branch, so
    the rules that own a capture (``.item()``, ``nonzero``) report it there.
    """
    for operand, traced in branch_operands(analysis):
        origin = origin_of(operand)
        if origin is not None:
            yield operand, traced, origin
