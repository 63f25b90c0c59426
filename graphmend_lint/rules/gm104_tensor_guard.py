"""GM104: ``if <tensor>: raise ...`` validation guards."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from astroid import nodes

from graphmend_lint.analysis.conditions import only_raises, tensor_condition_parts
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.predicate import Predicator, predicated_fix
from graphmend_lint.rules.base import Example
from graphmend_lint.rules.compiled_exception import ACCEPTS_RUNTIME_ERROR, CompiledExceptionRule
from graphmend_lint.rules.gb_types import gb_types

_GUARD = "import torch\n\n@torch.compile\ndef f(x):\n    if torch.isnan(x).any():\n        raise ValueError('nan')\n    return x\n"


class TensorValidationGuard(CompiledExceptionRule):
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
    """

    code = "GM104"
    name = "tensor-validation-guard"
    summary = "`if <tensor>: raise` splits the graph to validate"
    dynamo_gb = gb_types("GB0170")
    valid = (
        "import torch\n\n@torch.compile\ndef f(x):\n    if x.dim() != 2:\n        raise ValueError('2-D only')\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling() and torch.isnan(x).any():\n"
        "        raise ValueError('nan')\n    return x\n",
    )
    invalid = (
        Example(_GUARD),
        Example(
            _GUARD,
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    if torch.compiler.is_compiling():\n"
            "        torch._assert_async(~torch.isnan(x).any(), 'nan')\n    elif torch.isnan(x).any():\n"
            "        raise ValueError('nan')\n    return x\n",
            unsafe=True,
            options=ACCEPTS_RUNTIME_ERROR,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced in ctx.traced_nodes(nodes.If):
            if not only_raises(node.body) or node.orelse:
                continue
            parts = tensor_condition_parts(ctx.values, node.test)
            if not parts:
                continue
            fix = self.device_check_fix(ctx, node, "the original exception", partial(_device_check, ctx, node))
            message = "validation guard on a tensor value `{}` causes a graph break"
            yield from ctx.report_condition(parts, message, traced, fix)


def _device_check(ctx: RuleContext, node: nodes.If) -> Fix | None:
    return predicated_fix(
        ctx.analysis, Predicator.validation_guard, node, "Check on the device with `torch._assert_async` when compiling"
    )
