"""0-d tensors whose value Dynamo knows while tracing: ``torch.tensor(3)``, ``torch.tensor(h.size(1)) // 2``.

Dynamo's fake tensors keep the value of a one-element tensor made from Python numbers
(``torch.tensor``/``torch.as_tensor``), and of element-wise arithmetic over such tensors and Python
numbers. An operator that needs the tensor as a Python number *inside* tracing (a size, an integer
argument, a clamp bound beside a number, ``[w] * t``, ``math.sqrt(t)``) then reads that known value
and logs no break (measured on torch 2.13). Python-level reads still break on them: ``t.item()``,
``int(t)``, ``if t > 2:``, a slice bound ``x[:t]``, ``range(t)`` and ``'%d' % t`` all log a break, so
only the rules about such in-graph reads (GB0033, "Data dependent operator") ask this module.
DeBERTa's ``compute_attention_span`` returns ``torch.tensor(min(q.size(-2), k.size(-2), m))`` and
its caller clamps with ``torch.clamp(p, 0, span * 2 - 1)``: traced.
"""

from __future__ import annotations

from collections.abc import Callable

from astroid import nodes

from graphmend_lint.analysis.host_values import is_python_number
from graphmend_lint.analysis.lookup import reaching_bindings
from graphmend_lint.analysis.values import Kind, ValueOracle

#: torch functions that make a 0-d tensor of one Python number or shape element.
_FROM_NUMBER = frozenset({"tensor", "as_tensor"})
#: Element-wise torch functions and operators whose result Dynamo still knows when every operand it
#: sees is a Python value or such a tensor (measured: a reduction or a random draw is not known).
_ELEMENTWISE = frozenset({"div", "floor_divide", "mul", "clamp"})
ELEMENTWISE_OPERATORS = frozenset({"+", "-", "*", "//", "**"})
#: Keywords of those calls that carry no data: options, or the operand bounds ``clamp`` takes.
_OPTION_KEYWORDS = frozenset({"rounding_mode", "dtype", "device", "min", "max"})
#: How many names, calls and operators a value is followed back through.
_MAX_DEPTH = 8


def known_value_tensor(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """Whether *node* is a 0-d tensor made from Python numbers and shapes alone (see the module's docstring).

    Followed: a name bound once, ``.to(device)``, ``+ - * // **`` and ``torch.div``/``floor_divide``/
    ``mul``/``clamp`` over such tensors and Python values, and a call of this module's function whose
    every ``return`` is such a tensor. ``torch.tensor([2, 3]).max()``, ``torch.randint(1, 4, ())`` and
    anything computed from tensor data are not known.
    """
    if depth > _MAX_DEPTH:
        return False
    again = lambda child: known_value_tensor(values, child, depth + 1)  # noqa: E731
    if isinstance(node, nodes.Name):
        return _bound_once_to_known(values, node, again)
    if isinstance(node, nodes.BinOp):
        operands = (node.left, node.right)
        return (
            node.op in ELEMENTWISE_OPERATORS
            and all(python_value(values, operand) or again(operand) for operand in operands)
            and not all(python_value(values, operand) for operand in operands)
        )
    if not isinstance(node, nodes.Call) or any(isinstance(arg, nodes.Starred) for arg in node.args):
        return False
    if isinstance(node.func, nodes.Attribute) and node.func.attrname == "to" and values.qualified_name(node.func) is None:
        return again(node.func.expr)  # ``.to(device)`` keeps the value
    name = values.qualified_name(node.func) or ""
    operation = name[len("torch.") :] if name.startswith("torch.") else ""
    if not operation:
        return _returns_known(values, node, again)
    if any(keyword.arg not in _OPTION_KEYWORDS for keyword in node.keywords or []):
        return False
    if operation in _FROM_NUMBER:
        (number, *rest) = node.args or [None]
        return not rest and number is not None and not isinstance(number, (nodes.List, nodes.Tuple)) and python_value(values, number)
    if operation in _ELEMENTWISE and node.args:
        return all(python_value(values, arg) or again(arg) for arg in node.args)
    return False


def python_value(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """A Python value: static to the oracle, or a provable number (``batch, seq_len, d = x.size()``)."""
    return values.kind(node) is Kind.STATIC or is_python_number(values, node)


def _bound_once_to_known(values: ValueOracle, name: nodes.Name, known: Callable[[nodes.NodeNG], bool]) -> bool:
    try:
        bindings = reaching_bindings(name)
    except Exception:  # astroid lookups can fail on odd code; then nothing is proven
        return False
    if len(bindings) != 1:
        return False
    statement = bindings[0].parent
    return isinstance(statement, nodes.Assign) and statement.targets == [bindings[0]] and known(statement.value)


def _returns_known(values: ValueOracle, call: nodes.Call, known: Callable[[nodes.NodeNG], bool]) -> bool:
    """A call of this module's function that returns such a tensor on every path (DeBERTa's span)."""
    if values.called_function(call) is None:
        return False
    returned = values.value_sources(call)
    return bool(returned) and all(known(value) for value in returned)
