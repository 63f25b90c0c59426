"""Python arithmetic on a ``random`` draw that Dynamo traces as a tensor-backed number (GB0213).

Dynamo traces ``random.randint``, ``random.randrange`` and ``random.uniform``
itself when their arguments are Python constants: the draw becomes a number
held in a graph tensor, so that the graph replays a fresh draw on every call
(``side_effects.TRACED_RANDOM``; no break). Multiplying a tensor by it stays
in the graph. Python arithmetic on the draw with another Python number does
not: Dynamo has no rule for a builtin operator over that tensor-backed number
and a plain number, and breaks with "unimplemented builtin op on tensor
arguments" (GB0213) at the operation. Measured on torch 2.13 for ``+ - * / **``
with the draw on either side, a unary ``-``, ``lam *= 2`` and a draw named
first (``lam = random.uniform(0, 1)`` then ``1 - lam``); ``x * lam`` with a
tensor ``x`` does not break, nor does ``min(lam, 0.5)``.

Precision: the draw is the direct operand (a call, or a local name whose only
binding in the same traced function is the call); the other operand must be
known not to be a tensor (a constant, a static value, another draw). An
operand of unknown kind may be an image the draw scales (``img *
random.uniform(0.8, 1.2)``), which does not break, so it stays quiet.
"""

from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.host_values import condition_operands
from graphmend_lint.analysis.lookup import reaching_bindings
from graphmend_lint.analysis.side_effects import TRACED_RANDOM, imported
from graphmend_lint.analysis.tensor_sizes import size_arguments
from graphmend_lint.analysis.values import Kind, ValueOracle

#: Unary operators measured to break on a draw (``-lam``); ``not`` and ``~`` were not measured.
_UNARY = frozenset({"-", "+"})


@dataclass(frozen=True)
class DrawArithmetic:
    """Python arithmetic whose operand is a traced ``random`` draw."""

    draw: nodes.Call  # the ``random.uniform(...)`` call that produced the operand
    label: str  # ``random.uniform()``


def draw_arithmetic(values: ValueOracle, node: nodes.NodeNG) -> DrawArithmetic | None:
    """The draw *node* (a ``BinOp``, unary ``-``/``+`` or ``AugAssign``) does Python arithmetic on, if any."""
    if not _imports_random(values):
        return None  # the common case, decided without a name lookup per operand
    if isinstance(node, nodes.BinOp):
        return _binary(values, node.left, node.right) or _binary(values, node.right, node.left)
    if isinstance(node, nodes.UnaryOp) and node.op in _UNARY:
        return _described(values, _draw_of(values, node.operand))
    if isinstance(node, nodes.AugAssign) and isinstance(node.target, nodes.AssignName):
        bindings = [b for b in _bindings(node.target) if b is not node.target]
        draw = _single_draw(values, node.target, bindings)
        return _described(values, draw) if draw is not None and _host_number(values, node.value) else None
    return None


@dataclass(frozen=True)
class DrawUse:
    """A place where Python needs the value of a traced ``random`` draw, which Dynamo holds in a tensor."""

    draw: nodes.Call  # the ``random.randint(...)`` call that produced the value
    operand: nodes.NodeNG  # where the use reads it: the call, or the name bound to it
    label: str  # ``random.randint()``
    what: str  # ``a branch``, ``an index``, ``int()``...


#: Builtins that need a draw's value: ``int``/``float`` fail to fold it (GB0178), ``range`` asks its type
#: (GB4841); measured on torch 2.13.
_VALUE_BUILTINS = frozenset({"int", "float", "range"})


def draw_use(values: ValueOracle, node: nodes.NodeNG) -> DrawUse | None:
    """A traced draw *node* (an ``if``/``while``/conditional expression, a subscript or an ``int``/``float``/
    ``range`` call) needs as a Python value, if any.

    Measured on torch 2.13 with ``v = random.randint(0, 3)`` (also ``randrange``, ``uniform``): ``if v > 0``
    breaks at the test (GB0170), ``x[:v]`` and ``[a, b][v]`` at the subscript (GB0124), ``x[v]`` too (GB0033),
    ``int(v)`` / ``float(v)`` (GB0178) and ``range(v)`` (GB4841) at the call, and a size (GFPGAN's style
    mixing ``latent.repeat(1, inject_index, 1)``, ``torch.zeros(v, 2)``: GB0033). ``x * v``, ``torch.full(s, v)``,
    ``torch.tensor(v)`` and ``min(v, 0.5)`` trace, and so does any use in a frame resumed after a break
    that follows the draw: that frame receives the draw as a plain int (the caller checks that).
    """
    if not _imports_random(values):
        return None
    if isinstance(node, (nodes.If, nodes.While, nodes.IfExp)):
        return _first_use(values, _compared(node.test), "a branch")
    if isinstance(node, nodes.Subscript):
        index = node.slice
        parts = index.elts if isinstance(index, nodes.Tuple) else [index]
        bounds = [b for part in parts for b in ([part.lower, part.upper, part.step] if isinstance(part, nodes.Slice) else [part])]
        return _first_use(values, [b for b in bounds if b is not None], "an index")
    if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Name) and node.func.name in _VALUE_BUILTINS:
        if values.qualified_name(node.func) == node.func.name:  # the builtin, not a local ``int``
            return _first_use(values, list(node.args), f"`{node.func.name}()`")
    if isinstance(node, nodes.Call):
        return _first_use(values, size_arguments(values, node), "a size")
    return None


def _compared(test: nodes.NodeNG) -> list[nodes.NodeNG]:
    """The operands a condition tests: each part of ``and``/``or``/``not``, and both sides of a comparison."""
    operands: list[nodes.NodeNG] = []
    for part in condition_operands(test):
        if isinstance(part, nodes.Compare):
            operands += [part.left, *(operand for _, operand in part.ops)]
        else:
            operands.append(part)
    return operands


def _first_use(values: ValueOracle, operands: list[nodes.NodeNG], what: str) -> DrawUse | None:
    for operand in operands:
        draw = _draw_of(values, operand)
        if draw is not None:
            return DrawUse(draw, operand, f"{values.qualified_name(draw.func)}()", what)
    return None


def _imports_random(values: ValueOracle) -> bool:
    """The module imports ``random`` or one of its traced draws."""
    return any(target == "random" or target in TRACED_RANDOM for target in values.imports.aliases.values())


def _binary(values: ValueOracle, operand: nodes.NodeNG, other: nodes.NodeNG) -> DrawArithmetic | None:
    draw = _draw_of(values, operand)
    return _described(values, draw) if draw is not None and _host_number(values, other) else None


def _described(values: ValueOracle, draw: nodes.Call | None) -> DrawArithmetic | None:
    if draw is None:
        return None
    return DrawArithmetic(draw, f"{values.qualified_name(draw.func)}()")


def _draw_of(values: ValueOracle, node: nodes.NodeNG) -> nodes.Call | None:
    """The traced draw *node* is: the call itself, or a local name bound only to one."""
    if isinstance(node, nodes.Call):
        return node if _is_traced_draw(values, node) else None
    if isinstance(node, nodes.Name):
        return _single_draw(values, node, _bindings(node))
    return None


def _single_draw(values: ValueOracle, use: nodes.NodeNG, bindings: list[nodes.NodeNG]) -> nodes.Call | None:
    """The draw of the one binding in *use*'s own function (a draw at import time is a plain float)."""
    if len(bindings) != 1:
        return None
    binding = bindings[0]
    assign = binding.parent
    if not (
        isinstance(binding, nodes.AssignName)
        and isinstance(assign, nodes.Assign)
        and assign.targets == [binding]
        and isinstance(assign.value, nodes.Call)
        and isinstance(binding.scope(), nodes.FunctionDef)
        and binding.scope() is use.scope()
    ):
        return None
    return assign.value if _is_traced_draw(values, assign.value) else None


def _is_traced_draw(values: ValueOracle, call: nodes.Call) -> bool:
    """``random.uniform(a, b)`` (or an imported alias) on arguments that are not tensors."""
    if values.qualified_name(call.func) not in TRACED_RANDOM or not imported(call.func):
        return False
    arguments = [*call.args, *(keyword.value for keyword in call.keywords or [])]
    return not any(values.kind(argument) is Kind.TENSOR for argument in arguments)


def _host_number(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """*node* is known not to be a tensor: a constant number, a static value, or another draw."""
    if isinstance(node, nodes.Const):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    return values.kind(node) is Kind.STATIC or _draw_of(values, node) is not None


def _bindings(name: nodes.Name | nodes.AssignName) -> list[nodes.NodeNG]:
    try:
        return reaching_bindings(name)
    except Exception:  # astroid lookups can fail on odd code; stay quiet
        return []
