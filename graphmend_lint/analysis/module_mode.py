"""Eval-mode entries, and the training-only code they never trace.

``torch.compile(model.eval())`` traces ``forward`` with ``self.training``
False: Dynamo reads the flag as a constant and never looks inside
``if self.training:`` (nor past ``if not self.training: return x``). A break
there cannot happen under that entry (measured on torch 2.13: BART's and
OPT's layerdrop, DETR's ``isfinite`` clamp log nothing in eval mode). A
module compiled in its default mode is in training mode, so only an explicit
``.eval()`` / ``.train(False)`` says eval.

This runs on the stdlib ``ast`` like the rest of scope analysis.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from graphmend_lint.analysis.module_index import ModuleIndex

#: ``nn.Module`` methods that return the module and leave its mode alone (``to``, ``half``...).
_MODE_KEEPING = frozenset(
    {"half", "float", "double", "bfloat16", "to", "cuda", "cpu", "xpu", "type", "apply", "requires_grad_",
     "share_memory", "to_empty"}
)  # fmt: skip
_TERMINATORS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def mode_set_by(call: ast.expr) -> bool | None:
    """``True`` for ``m.eval()`` / ``m.train(False)``, ``False`` for ``m.train()``; else ``None``."""
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return None
    if call.func.attr == "eval" and not call.args and not call.keywords:
        return True
    if call.func.attr == "train":
        argument = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "mode"), None)
        if argument is None:
            return False
        if isinstance(argument, ast.Constant) and isinstance(argument.value, bool):
            return not argument.value
    return None


def compiles_in_eval_mode(subject: ast.expr, scope: str, line: int, index: ModuleIndex, depth: int = 0) -> bool:
    """Whether the module *subject* names is in eval mode when ``torch.compile`` (at *line*, in *scope*) gets it.

    ``Model().eval()``, ``model.eval().to(device)``, ``m = Model().eval()``
    then ``torch.compile(m)``, and ``model.eval()`` as a statement before the
    compile in the same function. Anything else answers ``False``.
    """
    node = subject
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        mode = mode_set_by(node)
        if mode is not None:
            return mode
        if node.func.attr not in _MODE_KEEPING:
            return False
        node = node.func.value
    if not isinstance(node, ast.Name) or depth > 4:
        return False
    statements = _mode_statements(index.scope_body(scope), node.id, line)
    if statements:
        return statements[-1][1]
    bindings = index.bindings(scope, node.id)
    return bool(bindings) and all(
        not binding.path and not binding.element and compiles_in_eval_mode(binding.value, scope, line, index, depth + 1)
        for binding in bindings
    )


def _mode_statements(body: list[ast.stmt], name: str, before: int) -> list[tuple[int, bool]]:
    """``name.eval()`` / ``name.train(...)`` statements of *body* (not nested functions) before line *before*."""
    found = []
    for node in _statements(body):
        if (
            isinstance(node, ast.Expr)
            and node.lineno < before
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and isinstance(node.value.func.value, ast.Name)
            and node.value.func.value.id == name
            and (mode := mode_set_by(node.value)) is not None
        ):
            found.append((node.lineno, mode))
    return sorted(found)


def training_only_ranges(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[int, int]]:
    """Line ranges of *function* that only run when ``self.training`` is True (nested functions excluded)."""
    ranges = []
    for block in _blocks(function.body):
        for position, statement in enumerate(block):
            if not isinstance(statement, ast.If):
                continue
            gate = _training_gate(statement.test)
            if gate == "training":
                ranges.append(_span(statement.body))
            elif gate == "eval":
                if statement.orelse:
                    ranges.append(_span(statement.orelse))
                elif isinstance(statement.body[-1], _TERMINATORS) and position + 1 < len(block):
                    ranges.append(_span(block[position + 1 :]))  # ``if not self.training: return x``
    return ranges


def _training_gate(test: ast.expr) -> str | None:
    """``"training"`` when *test* is true only in training (``self.training``, ``... and self.training``),
    ``"eval"`` when it is true whenever the module is in eval mode (``not self.training``, ``... or not self.training``)."""
    if _is_training_flag(test):
        return "training"
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and _is_training_flag(test.operand):
        return "eval"
    if isinstance(test, ast.BoolOp):
        gates = [_training_gate(value) for value in test.values]
        if isinstance(test.op, ast.And) and "training" in gates:
            return "training"
        if isinstance(test.op, ast.Or) and "eval" in gates:
            return "eval"
    return None


def _is_training_flag(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "training"


def _span(statements: list[ast.stmt]) -> tuple[int, int]:
    return statements[0].lineno, statements[-1].end_lineno or statements[-1].lineno


def _blocks(body: list[ast.stmt]) -> Iterator[list[ast.stmt]]:
    """*body* and every statement list nested in it, outside nested functions and classes."""
    yield body
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from _blocks(inner)
        for handler in getattr(statement, "handlers", ()):
            yield from _blocks(handler.body)
        for case in getattr(statement, "cases", ()):
            yield from _blocks(case.body)


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for block in _blocks(body):
        yield from block
