"""GM104: ``if <tensor>: raise ...`` validation guards."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import only_raises, snippet, tensor_condition_parts
from graphmend_lint.analysis.gates import gate_note
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Applicability, Diagnostic, Fix
from graphmend_lint.fixes.predicate import Predicator, declined_fix, predicated_fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types


#: GM104's ``compiled-exception`` option: what the user accepts under torch.compile.
KEEP = "keep"
RUNTIME_ERROR = "runtime-error"


class TensorValidationGuard(Rule):
    """## What it does
    Flags a validation guard, `if <tensor condition>: raise ...`, whose body
    only raises.

    ## Why is this bad
    The check needs the tensor's value on the host, so Dynamo breaks the graph
    (GB0170) and syncs with the device just to decide whether to raise, on
    every call.

    ## Example
    ```python
    if torch.isnan(y).any():
        raise ValueError("NaN in activations")
    ```

    ## Use instead
    Check on the device when compiling, and keep the eager check:
    ```python
    if torch.compiler.is_compiling():
        torch._assert_async(~torch.isnan(y).any(), "NaN in activations")
    elif torch.isnan(y).any():
        raise ValueError("NaN in activations")
    ```

    ## Fix safety
    Every way to keep such a check inside a compiled graph raises
    `RuntimeError` when it fails, whatever the original exception was
    (measured on torch 2.13: `torch._assert_async`, `torch._check_with(ValueError, ...)`
    and `torch._assert_scalar` all raise `RuntimeError` under `aot_eager` and
    `inductor`; `torch._check_value` on a tensor condition breaks the graph).
    A fix must not change what a program raises, so by default **no fix is
    offered**: the finding says why. A project that accepts a `RuntimeError`
    under compile sets the rule option `compiled-exception = "runtime-error"`;
    then the fix above is offered as **unsafe**. Eager runs keep the original
    `if` and its exception type and message; compiled runs raise
    `RuntimeError` with the constant message (a message formatted from tensor
    values is replaced by the exception's name and condition), and on CUDA the
    failure surfaces asynchronously, at a later synchronisation, as a device
    assertion. A guard inside a `try` block with handlers is never rewritten,
    with either setting: a handler that caught the original exception would
    stop catching it under compile.

    ## Options
    `compiled-exception`: `"keep"` (default: no fix) or `"runtime-error"`.
    """

    code = "GM104"
    name = "tensor-validation-guard"
    summary = "`if <tensor>: raise` splits the graph to validate"
    dynamo_gb = gb_types("GB0170")
    fix_applicabilities = (Applicability.UNSAFE, Applicability.DISPLAY_ONLY)
    options = {"compiled-exception": KEEP}
    valid = (
        "import torch\n\n@torch.compile\ndef f(x):\n    if x.dim() != 2:\n        raise ValueError('2-D only')\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling() and torch.isnan(x).any():\n"
        "        raise ValueError('nan')\n    return x\n",
    )
    invalid = (
        Example("import torch\n\n@torch.compile\ndef f(x):\n    if torch.isnan(x).any():\n        raise ValueError('nan')\n    return x\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        accepts_runtime_error = ctx.options.get("compiled-exception") == RUNTIME_ERROR
        for node, traced in ctx.traced_nodes(nodes.If):
            if not only_raises(node.body) or node.orelse:
                continue
            parts = tensor_condition_parts(ctx.values, node.test)
            if not parts:
                continue
            fix = self._fix(ctx, node, accepts_runtime_error)
            for index, part in enumerate(parts):
                message = f"validation guard on a tensor value `{snippet(part)}` causes a graph break"
                message += gate_note(ctx.values, part)
                yield ctx.report(part, message, traced, fix if index == 0 else None)

    @staticmethod
    def _fix(ctx: RuleContext, node: nodes.If, accepts_runtime_error: bool) -> Fix:
        if _inside_try_with_handlers(node):
            return declined_fix("a `try` around the guard has handlers, which would stop catching it under compile")
        if not accepts_runtime_error:
            return declined_fix(
                "under torch.compile an in-graph check raises `RuntimeError`, not the original exception; "
                'set `compiled-exception = "runtime-error"` for GM104 to accept that'
            )
        return predicated_fix(ctx.analysis, Predicator.validation_guard, node, "Check on the device with `torch._assert_async` when compiling")


def _inside_try_with_handlers(node: nodes.NodeNG) -> bool:
    """*node* sits in the body of a ``try`` (in its function) that has ``except`` clauses."""
    child, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
        if isinstance(parent, (nodes.Try, nodes.TryStar)) and parent.handlers and child in parent.body:
            return True
        child, parent = parent, parent.parent
    return False
