"""Static gates in front of a break: ``self.training``, a dtype test.

``if self.training and torch.rand([]) < p:`` breaks only in training mode:
Python short-circuits the ``and``, so in eval mode Dynamo never sees the
tensor operand. ``if x.dtype == torch.float16 and torch.isinf(x).any():``
breaks only for fp16 inputs (measured, torch 2.13). Both are still breaks,
and a finding that does not say when it happens looks like a false positive
to someone who runs an fp32 model in eval mode. :func:`gate_note` finds such
gates (earlier operands of an ``and`` chain, and the tests of enclosing
``if`` statements) and words them for a message.
"""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.scope import COMPILING_PREDICATES
from graphmend_lint.analysis.values import Kind, ValueOracle

#: How a message names the dtypes people gate on.
_DTYPE_WORDS = {
    "torch.float16": "fp16",
    "torch.half": "fp16",
    "torch.bfloat16": "bf16",
    "torch.float32": "fp32",
    "torch.float": "fp32",
    "torch.float64": "fp64",
    "torch.double": "fp64",
}
_MAX_ENCLOSING = 8


def _training_gate(test: nodes.NodeNG) -> str | None:
    """``self.training`` / ``not self.training`` (any receiver's ``.training``)."""
    negated = isinstance(test, nodes.UnaryOp) and test.op == "not"
    operand = test.operand if negated else test
    if isinstance(operand, nodes.Attribute) and operand.attrname == "training":
        return "eval mode" if negated else "training"
    return None


def _dtype_gate(values: ValueOracle, test: nodes.NodeNG) -> str | None:
    """``x.dtype == torch.float16``, ``x.dtype is torch.half``, ``x.dtype in (torch.float16, ...)``."""
    if not isinstance(test, nodes.Compare) or len(test.ops) != 1:
        return None
    operator, right = test.ops[0]
    left = test.left
    if not (isinstance(left, nodes.Attribute) and left.attrname == "dtype"):
        left, right = right, left
    if not (isinstance(left, nodes.Attribute) and left.attrname == "dtype"):
        return None
    options = right.elts if isinstance(right, (nodes.Tuple, nodes.List, nodes.Set)) else [right]
    words = [_DTYPE_WORDS.get(values.qualified_name(option) or "") for option in options]
    if None in words or not words:
        return None
    listed = "/".join(dict.fromkeys(word for word in words if word))
    if operator in {"==", "is", "in"}:
        return f"in {listed}"
    if operator in {"!=", "is not", "not in"}:
        return f"outside {listed}"
    return None


def _gates_in(values: ValueOracle, test: nodes.NodeNG) -> Iterator[str]:
    """Every gate among the conjuncts of *test* (``a and (b and c)`` → a, b, c)."""
    if isinstance(test, nodes.BoolOp) and test.op == "and":
        for value in test.values:
            yield from _gates_in(values, value)
        return
    if values.kind(test) is Kind.TENSOR:
        return
    training = _training_gate(test)
    if training is not None:
        yield f"only in {training}"
        return
    dtype = _dtype_gate(values, test)
    if dtype is not None:
        yield f"only {dtype}"


def _earlier_conjuncts(node: nodes.NodeNG) -> Iterator[nodes.NodeNG]:
    """Operands evaluated before *node* in the ``and`` chains it sits in.

    In ``a or b``, ``b`` runs exactly when ``a`` is false, not a gate a message can word, but an ``and``
    around the ``or`` still gates both (Qwen2-Audio's ``x.dtype == torch.float16 and
    (torch.isinf(x).any() or torch.isnan(x).any())``).
    """
    child, parent = node, node.parent
    while isinstance(parent, (nodes.BoolOp, nodes.UnaryOp)):
        if isinstance(parent, nodes.UnaryOp) and parent.op == "not":
            return  # `not (gate and t)`: negation turns the gate around
        if isinstance(parent, nodes.BoolOp) and parent.op == "and":
            for value in parent.values:
                if value is child:
                    break
                yield value
        child, parent = parent, parent.parent


def _enclosing_tests(node: nodes.NodeNG) -> Iterator[nodes.NodeNG]:
    """Tests of the ``if`` statements whose *body* holds *node*, innermost first, up to the function."""
    child, parent = node, node.parent
    for _ in range(_MAX_ENCLOSING * 4):
        if parent is None or isinstance(parent, (nodes.FunctionDef, nodes.ClassDef, nodes.Module)):
            return
        if isinstance(parent, nodes.If) and child in parent.body:
            yield parent.test
        child, parent = parent, parent.parent


_NEGATED = {"only in training": "only in eval mode", "only in eval mode": "only in training"}
_EXITS = (nodes.Return, nodes.Raise, nodes.Continue, nodes.Break)


def _negated_gate(gate: str) -> str | None:
    if gate in _NEGATED:
        return _NEGATED[gate]
    if gate.startswith("only in "):
        return "only outside " + gate.removeprefix("only in ")
    if gate.startswith("only outside "):
        return "only in " + gate.removeprefix("only outside ")
    return None


def _early_exit_tests(node: nodes.NodeNG) -> Iterator[nodes.NodeNG]:
    """Tests of earlier ``if <gate>: ...; return`` statements in the blocks around *node*.

    Code after such a statement runs only when the test was false (BigBird's
    ``if not self.training: return rand_attn`` makes the rest training-only).
    """
    statement = node if node.is_statement else node.statement()
    for _ in range(_MAX_ENCLOSING):
        parent = statement.parent
        if parent is None or isinstance(parent, (nodes.ClassDef, nodes.Module)):
            return
        for block in ("body", "orelse", "finalbody"):
            siblings = getattr(parent, block, None)
            if isinstance(siblings, list) and statement in siblings:
                for earlier in siblings[: siblings.index(statement)]:
                    if isinstance(earlier, nodes.If) and not earlier.orelse and isinstance(earlier.body[-1], _EXITS):
                        yield earlier.test
        if isinstance(parent, nodes.FunctionDef):
            return
        statement = parent


def gate_note(values: ValueOracle, node: nodes.NodeNG) -> str:
    """``" (only in training)"`` / ``" (only in fp16)"`` when a static gate guards *node*, else ``""``.

    *node* is the expression or statement that breaks. The note is meant to be
    appended to a finding's message.
    """
    gates: list[str] = []
    for conjunct in _earlier_conjuncts(node):
        gates.extend(_gates_in(values, conjunct))
    for test in _enclosing_tests(node):
        gates.extend(_gates_in(values, test))
    for test in _early_exit_tests(node):
        if isinstance(test, nodes.BoolOp):
            continue  # `if a and b: return` leaves "not a or not b", no single gate
        gates.extend(negated for gate in _gates_in(values, test) if (negated := _negated_gate(gate)) is not None)
    unique = list(dict.fromkeys(gates))
    return f" ({', '.join(unique)})" if unique else ""


def _is_compiling_check(node: nodes.NodeNG) -> bool:
    """``torch.compiler.is_compiling()`` and its aliases (any receiver, as scope analysis accepts them)."""
    if not isinstance(node, nodes.Call) or node.args or node.keywords:
        return False
    func = node.func
    name = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", None)
    return name in COMPILING_PREDICATES


def never_traced(node: nodes.NodeNG) -> bool:
    """*node* sits after ``not torch.compiler.is_compiling()`` in an ``and`` chain.

    Dynamo folds that operand to ``False``, so it never evaluates the rest.
    """
    return any(
        isinstance(conjunct, nodes.UnaryOp) and conjunct.op == "not" and _is_compiling_check(conjunct.operand)
        for conjunct in _earlier_conjuncts(node)
    )
