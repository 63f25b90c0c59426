"""GM101's rewrite of a tensor guard around one masked fill: ``if c: x[mask] = v``.

FastSpeech2-Conformer's length regulator (transformers 5.23,
``modeling_fastspeech2_conformer.py:108``)::

    if duration_labels.sum() == 0:
        duration_labels[duration_labels.sum(dim=1).eq(0)] = 1

A ``torch.where`` select cannot take it (the branch writes into a tensor,
it binds no name), but the guard folds into the mask: the fill with
``mask & (c)`` writes exactly the elements the guarded fill wrote, and
nothing when ``c`` is false. Dynamo traces a boolean-mask assignment
(``index_put_``) without a break, so under compile the graph stays whole
(measured, torch 2.13: the GB0170 at the ``if`` is gone, ``fullgraph=True``
runs, outputs and the mutated tensor equal). The eager code is kept as it
is, behind ``if torch.compiler.is_compiling():`` (constant-folded)::

    if torch.compiler.is_compiling():
        duration_labels[duration_labels.sum(dim=1).eq(0) & (duration_labels.sum() == 0)] = 1
    elif duration_labels.sum() == 0:
        duration_labels[duration_labels.sum(dim=1).eq(0)] = 1

because the unguarded fill is not the same eagerly: it always writes in
place, so with ``c`` false a leaf that requires grad now raises, and a
tensor saved for backward has its version bumped.

Declined unless: the ``if`` has no ``else`` and one statement, the
assignment's index is provably a boolean tensor (``&`` with a 0-d condition
keeps its shape, and indexing aligns it with the leading dimensions as
before), the condition is 0-d (a full reduction compared with a number: a
condition with dimensions would broadcast the mask), the value is a number
(a tensor value's length would have to follow the selection's), and the
mask and the condition call nothing with effects.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.host_values import is_bool_tensor, is_python_number
from graphmend_lint.analysis.values import ValueOracle
from graphmend_lint.fixes.hop_print import is_zero_dim
from graphmend_lint.fixes.predicate import Declined, Predicator, Rewrite

MESSAGE = "Under compile, fold the condition into the mask (`x[mask & (c)] = v`); the eager code is kept"


def masked_fill(node: nodes.If) -> nodes.Subscript | None:
    """The target ``x[mask]`` of ``if c: x[mask] = v``, the only statement of an ``else``-less ``if``."""
    if node.orelse or len(node.body) != 1:
        return None
    statement = node.body[0]
    if not (isinstance(statement, nodes.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    return target if isinstance(target, nodes.Subscript) else None


def masked_fill_rewrite(predicator: Predicator, node: nodes.If, target: nodes.Subscript) -> Rewrite:
    """``if is_compiling(): x[mask & (c)] = v`` in front of the original ``if``, which becomes its ``elif``."""
    values = predicator.values
    mask, value = target.slice, node.body[0].value
    if not is_bool_tensor(values, mask):
        raise Declined(f"`{mask.as_string()}` is not known to be a boolean tensor, so `&` cannot fold the condition in")
    if not _is_zero_dim_condition(values, node.test):
        raise Declined(f"`{node.test.as_string()}` is not known to be 0-d, so `&` could broadcast the mask")
    if not is_python_number(values, value):
        raise Declined(f"`{value.as_string()}` is not a number, so it cannot fill a selection of any length")
    predicator.check_effects(mask)
    predicator.check_effects(node.test)
    condition = predicator.condition(node.test)
    folded = f"{predicator.parenthesised(predicator.text(mask))} & {predicator.parenthesised(condition)}"
    fill = f"{predicator.text(target.value)}[{folded}] = {predicator.text(value)}"
    start = predicator.analysis.start_of(node)
    indent = predicator.analysis.source.line(start.line)[: start.col]
    if indent.strip():
        raise Declined("the `if` shares its line with other code")
    content = f"if {predicator.torch}.compiler.is_compiling():\n{indent}    {fill}\n{indent}el"
    return Rewrite(start, start, content, safe=False, message=MESSAGE)


def _is_zero_dim_condition(values: ValueOracle, test: nodes.NodeNG) -> bool:
    """``y.sum() == 0``, ``torch.any(m)``, and ``and``/``or``/``not`` of such: a 0-d boolean."""
    if isinstance(test, nodes.BoolOp):
        return all(_is_zero_dim_condition(values, operand) for operand in test.values)
    if isinstance(test, nodes.UnaryOp) and test.op == "not":
        return _is_zero_dim_condition(values, test.operand)
    if isinstance(test, nodes.Compare):
        operands = [test.left, *(operand for _, operand in test.ops)]
        return all(is_zero_dim(values, operand) or is_python_number(values, operand) for operand in operands)
    return is_zero_dim(values, test)
