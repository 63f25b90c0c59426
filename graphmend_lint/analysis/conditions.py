"""Which parts of a condition make Dynamo branch on a tensor's value.

Python evaluates ``a and b`` operand by operand, each with its own jump, so
Dynamo breaks once per tensor operand, at that operand's line. ``not x``
breaks where ``x`` does. Anything else breaks as a whole when it is a tensor.
An operand Dynamo folds to a constant that decides the whole test
(``not is_torchdynamo_compiling() and ...``), or that every call of the
function settles (``zero_division == "warn" and ...`` when no call passes
``"warn"``), ends it: the operands after it are never evaluated under compile.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.values import Kind, ValueOracle


def tensor_condition_parts(values: ValueOracle, test: nodes.NodeNG) -> list[nodes.NodeNG]:
    """The sub-expressions of *test* Dynamo would break on, in source order."""
    if isinstance(test, nodes.BoolOp):
        parts = []
        for value in test.values:
            parts += tensor_condition_parts(values, value)
            if values.fixed_value(value) is (test.op == "or"):
                break  # ``False and ...`` / ``True or ...``: the rest is never evaluated under compile
        return parts
    if isinstance(test, nodes.UnaryOp) and test.op == "not":
        return tensor_condition_parts(values, test.operand)
    return [test] if values.kind(test) is Kind.TENSOR else []


def only_raises(body: list[nodes.NodeNG]) -> bool:
    """A validation guard: the branch does nothing but raise."""
    return bool(body) and all(isinstance(statement, nodes.Raise) for statement in body)


def snippet(node: nodes.NodeNG, limit: int = 60) -> str:
    """A one-line excerpt of *node*'s source for messages."""
    text = " ".join(node.as_string().split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
