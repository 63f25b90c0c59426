"""Branches on ``<parameter> is None`` that no call of the function takes, so their bindings never run.

transformers' ``_update_causal_mask(attention_mask, input_tensor, cache_position)``
(zamba2) sets ``target_length = sequence_length`` under ``if cache_position
is None:`` and ``cache_position[-1] + 1`` otherwise. Its only caller is the
model's ``forward``, which fills ``cache_position`` in first (``if
cache_position is None: cache_position = torch.arange(...)``). Dynamo
specialises on the ``is None`` test, so only the tensor binding runs, and
``torch.full((sequence_length, target_length), ...)`` breaks on it (GB0033,
measured on torch 2.13). Counting the dead binding made ``target_length``
of unknown kind, and the break went unreported.

A branch is dead only when every call of its function in this file passes
an argument for the parameter that is provably not ``None``: a literal other
than ``None``, a ``torch`` call, arithmetic, or a name whose every binding
reaching the call is one of those or a parameter that an earlier ``if <name>
is None:`` of the same block always rebinds. No call at all proves nothing.

The same proof settles the expression forms of the guard:
``dim_size if dim_size is not None else int(index.max())`` runs only its first
arm, and OpenNMT's ``max_len = max_len or lengths.max()`` only its first
operand when every call passes a size (``align.size(-1)``) or a non-zero
constant, so ``torch.arange(0, max_len)`` never sees the tensor. A size of
zero would take the other operand; real callers pass none, and the rule is
the one to stay quiet on. Comparisons that every positive size passes work
alike: WeNet's and ESPnet's ``make_pad_mask(lengths, max_len=0)`` computes
``max_len if max_len > 0 else lengths.max().item()``, and its callers pass
``maxlen = ctc_probs.size(1)``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

from astroid import nodes

from graphmend_lint.analysis.lookup import reaching_bindings, runs_before
from graphmend_lint.analysis.walk import size_receiver

if TYPE_CHECKING:
    from graphmend_lint.analysis.values import ValueOracle

_MAX_DEPTH = 3
#: Accepts an argument (or a value bound to a name) as settling a guard: ``(values, node, depth)``.
Proof = Callable[["ValueOracle", nodes.NodeNG, int], bool]


def in_dead_branch(values: ValueOracle, binding: nodes.NodeNG) -> bool:
    """*binding* sits in the branch of an ``if`` on a parameter that no call takes (:func:`settled_test`)."""
    child, parent = binding, binding.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
        if isinstance(parent, nodes.If) and child is not parent.test:
            outcome = settled_test(values, parent.test)
            if outcome is not None and (child in parent.body) != outcome:
                return True
        child, parent = parent, parent.parent
    return False


def live_arm(values: ValueOracle, expression: nodes.IfExp) -> nodes.NodeNG | None:
    """The only arm of ``p if p is not None else <other>`` (``p if p > 0 else <other>``, ...) that runs,
    when every call settles the test the same way; else ``None``."""
    outcome = settled_test(values, expression.test)
    if outcome is None:
        return None
    return expression.body if outcome else expression.orelse


def live_operands(values: ValueOracle, expression: nodes.BoolOp) -> list[nodes.NodeNG]:
    """The operands of *expression* that can be its value: just ``p`` of ``p or <default>`` when every call
    passes ``p`` a size or a non-zero constant."""
    first = expression.values[0]
    if expression.op == "or" and isinstance(first, nodes.Name) and _parameter_always(values, first, _truthy):
        return [first]
    return list(expression.values)


def settled_test(values: ValueOracle, test: nodes.NodeNG) -> bool | None:
    """The value *test* has on every call of its function, when :func:`_parameter_test` proves one or every
    call passes a literal (:func:`_literal_outcome`); ``a and b`` is settled false by one operand settled
    false (``or`` alike), since Python never evaluates the rest.

    Remembered per test for the file: the traced walk, GM101's condition parts and :func:`in_dead_branch`
    (once per enclosing ``if`` of every binding looked up) all ask about the same tests."""
    known = values.memo("settled_test")
    if test not in known:
        known[test] = _settle(values, test)
    return known[test]


def _settle(values: ValueOracle, test: nodes.NodeNG) -> bool | None:
    if isinstance(test, nodes.BoolOp):
        decisive = test.op == "or"
        outcomes = [settled_test(values, operand) for operand in test.values]
        return decisive if decisive in outcomes else (not decisive if all(o is not None for o in outcomes) else None)
    tested = _parameter_test(test)
    if tested is not None:
        name, proof, outcome = tested
        if _parameter_always(values, name, proof):
            return outcome
    return _literal_outcome(values, test)


_COMPARISONS: dict[str, Callable[[object, object], object]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


def _literal_outcome(values: ValueOracle, test: nodes.NodeNG) -> bool | None:
    """torchmetrics' ``if zero_division == "warn" and torch.any(denom == 0):`` when no call passes ``"warn"``,
    Medusa's ``if temperature == 0:``: every call passes the parameter a literal, or leaves out its literal
    default, and the test comes out the same for each (Dynamo specialises on the Python value)."""
    evaluate: Callable[[object], object]
    if isinstance(test, nodes.Name):
        name, evaluate = test, bool
    elif isinstance(test, nodes.UnaryOp) and test.op == "not" and isinstance(test.operand, nodes.Name):
        name, evaluate = test.operand, operator.not_
    elif isinstance(test, nodes.Compare) and isinstance(test.left, nodes.Name) and len(test.ops) == 1:
        symbol, right = test.ops[0]
        if symbol not in _COMPARISONS or not isinstance(right, nodes.Const):
            return None
        name, evaluate = test.left, lambda value: _COMPARISONS[symbol](value, right.value)
    else:
        return None
    literals = _literals_passed(values, name)
    try:
        outcomes = {bool(evaluate(value)) for value in literals or ()}
    except Exception:  # ``"warn" > 0``: no answer
        return None
    return outcomes.pop() if len(outcomes) == 1 else None


def _literals_passed(values: ValueOracle, use: nodes.Name, depth: int = 0) -> list[object] | None:
    """The constant each call of *use*'s function passes for it (its default where a call leaves it out, and
    through a caller's own parameter: torchmetrics' ``_safe_divide(..., zero_division)``); ``None`` unless
    every call is seen passing one."""
    function = _unbound_parameter_of(use)
    if not isinstance(function, nodes.FunctionDef) or depth > _MAX_DEPTH:
        return None
    try:
        default: nodes.NodeNG | None = function.args.default_value(use.name)
    except Exception:  # astroid's NoDefault: a call that leaves it out is an error, not a default
        default = None
    calls = values.calls_of(function)
    if len(values.own_calls_of(function)) != len(calls):
        return None  # ``obj.step(x, 0.7)`` may be another ``step``: its literal proves nothing here
    found: list[object] = []
    for call in calls:
        if any(isinstance(a, nodes.Starred) for a in call.args) or any(k.arg is None for k in call.keywords or ()):
            return None
        passed = values.passed_for(call, function, use.name)
        argument = passed[0] if len(passed) == 1 else default if not passed else None
        if isinstance(argument, nodes.Const):
            found.append(argument.value)
            continue
        forwarded = _literals_passed(values, argument, depth + 1) if isinstance(argument, nodes.Name) else None
        if forwarded is None:
            return None
        found.extend(forwarded)
    return found or None


#: ``p > c``, ``p >= c``, ``p != c``: which constants *c* every positive size passes.
_POSITIVE_PASSES = {">": lambda c: c < 1, ">=": lambda c: c <= 1, "!=": lambda c: c < 1}
#: The negations: which constants *c* make the test fail for every positive size.
_POSITIVE_FAILS = {"<=": lambda c: c < 1, "<": lambda c: c <= 1, "==": lambda c: c < 1}


def _parameter_test(test: nodes.NodeNG) -> tuple[nodes.Name, Proof, bool] | None:
    """The name a guard reads, the proof that settles it, and the test's value once proved.

    ``p is None`` is false and ``p is not None`` true for every argument :func:`_never_none` accepts;
    ``p > 0`` (``>= 1``, ``!= 0``) is true and ``p <= 0`` (``< 1``, ``== 0``) false for every argument
    :func:`_positive` accepts; a bare ``p`` is true and ``not p`` false for every one :func:`_truthy` accepts.
    """
    if isinstance(test, nodes.Name):
        return test, _truthy, True
    if isinstance(test, nodes.UnaryOp) and test.op == "not" and isinstance(test.operand, nodes.Name):
        return test.operand, _truthy, False
    tested = none_test(test)
    if tested is not None:
        return test.left, _never_none, not tested[1]
    if not (isinstance(test, nodes.Compare) and isinstance(test.left, nodes.Name) and len(test.ops) == 1):
        return None
    symbol, right = test.ops[0]
    if not (isinstance(right, nodes.Const) and isinstance(right.value, (int, float)) and not isinstance(right.value, bool)):
        return None
    if symbol in _POSITIVE_PASSES and _POSITIVE_PASSES[symbol](right.value):
        return test.left, _positive, True
    if symbol in _POSITIVE_FAILS and _POSITIVE_FAILS[symbol](right.value):
        return test.left, _positive, False
    return None


def none_test(test: nodes.NodeNG) -> tuple[str, bool] | None:
    """``(name, True)`` for ``name is None``, ``(name, False)`` for ``name is not None``."""
    if not (isinstance(test, nodes.Compare) and isinstance(test.left, nodes.Name) and len(test.ops) == 1):
        return None
    symbol, right = test.ops[0]
    if symbol not in {"is", "is not"} or not (isinstance(right, nodes.Const) and right.value is None):
        return None
    return test.left.name, symbol == "is"


def _unbound_parameter_of(use: nodes.Name) -> nodes.FunctionDef | None:
    """The function *use* reads a parameter of, when nothing rebinds it before *use* and the file can show
    its calls: a ``forward`` or ``__call__`` also runs from calls it does not show (the compiled entry,
    ``super().forward(x, mask, return_intermediates=True)`` in Hiera's MAE subclass, hooks)."""
    function = use.frame()
    if not isinstance(function, nodes.FunctionDef) or function.name in {"forward", "__call__"}:
        return None
    if use.name not in {a.name for a in function.args.args or ()}:
        return None
    try:
        if not all(isinstance(b.parent, nodes.Arguments) for b in reaching_bindings(use)):
            return None  # rebound before the test
    except Exception:  # astroid lookups can fail on odd code; then nothing is known
        return None
    return function


def _parameter_always(values: ValueOracle, use: nodes.Name, proof: Proof) -> bool:
    """*use* reads a parameter of its function, unbound before it, for which every call passes an argument
    that *proof* accepts."""
    function = _unbound_parameter_of(use)
    if function is None:
        return False
    calls = values.calls_of(function)
    if len(values.own_calls_of(function)) != len(calls):
        return False  # ``obj.step(x, 0.7)`` may be another ``step``: what it passes proves nothing here
    passed = values.call_site_arguments(function, use.name)
    return bool(calls) and len(passed) == len(calls) and all(proof(values, argument, 0) for argument in passed)


def _truthy(values: ValueOracle, node: nodes.NodeNG, depth: int) -> bool:
    """A non-zero constant or a size (:func:`_positive`)."""
    if isinstance(node, nodes.Const):
        return bool(node.value)
    return _positive(values, node, depth)


def _positive(values: ValueOracle, node: nodes.NodeNG, depth: int) -> bool:
    """A positive number: a constant, a size (``x.size(-1)``, ``x.shape[1]``, ``len(x)``), or a name every
    binding reaching it gives one (``maxlen = probs.size(1)``)."""
    if isinstance(node, nodes.Const):
        return isinstance(node.value, (int, float)) and node.value > 0
    if isinstance(node, nodes.Call):
        return size_receiver(node) is not None
    if isinstance(node, nodes.Subscript):
        return is_sizes(node.value)
    return isinstance(node, nodes.Name) and _every_binding(values, node, depth, _positive)


def _never_none(values: ValueOracle, node: nodes.NodeNG, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, nodes.Const):
        return node.value is not None
    if isinstance(node, (nodes.BinOp, nodes.List, nodes.Tuple, nodes.Dict)):
        return True
    if isinstance(node, nodes.Call):
        return size_receiver(node) is not None or (values.qualified_name(node.func) or "").startswith("torch.")
    if isinstance(node, nodes.Subscript):
        return is_sizes(node.value)
    return isinstance(node, nodes.Name) and _every_binding(values, node, depth, _never_none)


def _every_binding(values: ValueOracle, use: nodes.Name, depth: int, proof: Proof) -> bool:
    """Every binding reaching *use* assigns a value *proof* accepts; a parameter counts for ``None``
    proofs when an ``if <parameter> is None:`` fills it in first."""
    if depth > _MAX_DEPTH:
        return False
    try:
        bindings = reaching_bindings(use)
    except Exception:  # astroid lookups can fail on odd code; then nothing is known
        return False
    return bool(bindings) and all(_binds(values, binding, use, depth, proof) for binding in bindings)


def _binds(values: ValueOracle, binding: nodes.NodeNG, use: nodes.Name, depth: int, proof: Proof) -> bool:
    parent = binding.parent
    if isinstance(parent, nodes.Arguments):
        return proof is _never_none and _filled_in_before(binding, use)
    if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is not None:
        return proof(values, parent.value, depth + 1)
    return False


def is_sizes(node: nodes.NodeNG) -> bool:
    """``x.shape`` or ``x.size()``: numbers, one per dimension."""
    return (isinstance(node, nodes.Attribute) and node.attrname == "shape") or (
        isinstance(node, nodes.Call) and not node.args and isinstance(node.func, nodes.Attribute)
        and node.func.attrname == "size"
    )


def _filled_in_before(parameter: nodes.AssignName, use: nodes.Name) -> bool:
    """An ``if <parameter> is None:`` whose body always rebinds it runs before *use* (``forward``'s
    ``if cache_position is None: cache_position = torch.arange(...)``): past it, the parameter is set."""
    function = parameter.frame()
    for statement in function.body if isinstance(function, nodes.FunctionDef) else ():
        if not (isinstance(statement, nodes.If) and runs_before(statement, use)) or statement.parent_of(use):
            continue
        tested = none_test(statement.test)
        if tested == (parameter.name, True) and any(
            isinstance(step, nodes.Assign)
            and any(isinstance(t, nodes.AssignName) and t.name == parameter.name for t in step.targets)
            for step in statement.body
        ):
            return True
    return False
