"""Keep ``torch.allclose`` on the device: ``torch.isclose(...).all()``.

``torch.allclose(a, b, ...)`` is ``torch.isclose(a, b, ...).all()`` copied to
a Python bool (ATen computes it exactly that way), so the two spellings agree
on every input, broadcasting and NaN handling included; only the type of the
result differs (a 0-d bool tensor instead of ``bool``). In an ``if`` test the
truth value is the same, and GM101 can then turn the branch into a
``torch.where`` / ``torch.cond``. The rewrite is offered only when that
predication follows (checked by linting the edited text): replacing the call
alone would move the break from the call to the ``if``.

``torch.equal`` has no such twin: it is ``False`` for tensors of different
shapes, where ``(a == b).all()`` broadcasts or raises. It gets a message.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.host_sync import if_test_of, node_text, predicated_after

KEEP_AS_TENSOR = {
    "allclose": "compute `torch.isclose(a, b).all()` (a 0-d bool tensor) and select with `torch.where` / "
    "`torch.cond` instead of branching on it",
    "equal": "when the shapes are known to match, compute `(a == b).all()` (a 0-d bool tensor) and select with "
    "`torch.where` / `torch.cond`; `torch.equal` is False for different shapes, where `==` broadcasts",
    "is_nonzero": "keep the test a 0-d bool tensor (`t != 0`) and select with `torch.where` / `torch.cond`",
}


def isclose_fix(analysis: FileAnalysis, call: nodes.Call, predicate: str) -> Fix:
    """``torch.allclose(a, b)`` → ``torch.isclose(a, b).all()`` when GM101 then predicates the ``if``."""
    advice = Fix.advice(f"no automatic fix: {KEEP_AS_TENSOR[predicate]}")
    func = call.func
    if predicate != "allclose" or not isinstance(func, nodes.Attribute) or if_test_of(call) is None:
        return advice
    text = node_text(analysis, call)
    callee = node_text(analysis, func)
    if not text.startswith(callee) or not callee.endswith("allclose"):
        return advice
    content = callee.removesuffix("allclose") + "isclose" + text.removeprefix(callee) + ".all()"
    edit = Edit(analysis.start_of(call), analysis.end_of(call), content)
    if not predicated_after(analysis, edit, [call]):
        return advice
    return Fix(
        edits=(edit,),
        applicability=Applicability.UNSAFE,
        message="Keep the comparison a tensor (`isclose(...).all()`); GM101 then predicates the branch",
    )
