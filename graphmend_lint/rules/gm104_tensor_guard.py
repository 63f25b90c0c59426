"""GM104: ``if <tensor>: raise ...`` validation guards."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import only_raises, snippet, tensor_condition_parts
from graphmend_lint.analysis.gates import gate_note
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Applicability, Diagnostic
from graphmend_lint.fixes.predicate import predicated_fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gm101_tensor_branch import DATA_DEPENDENT_BRANCHING


class TensorValidationGuard(Rule):
    """## What it does
    Flags a validation guard, `if <tensor condition>: raise ...`, whose body
    only raises.

    ## Why is this bad
    The check needs the tensor's value on the host, so Dynamo breaks the graph
    and syncs with the device just to decide whether to raise, on every call.

    ## Example
    ```python
    if torch.isnan(y).any():
        raise ValueError("NaN in activations")
    ```

    ## Use instead
    ```python
    torch._assert_async(~torch.isnan(y).any(), "NaN in activations")
    ```

    ## Fix safety
    The fix replaces the guard with `torch._assert_async(~(c), msg)`, which
    Dynamo keeps in the graph. It is **unsafe**: the exception type changes
    (a `RuntimeError` instead of, say, `ValueError`, so `except ValueError`
    handlers stop catching it), and on CUDA the failure is reported
    asynchronously, at a later synchronisation point, not at this line.
    A message built from tensor values is replaced by a constant message.
    """

    code = "GM104"
    name = "tensor-validation-guard"
    summary = "`if <tensor>: raise` splits the graph to validate"
    dynamo_gb = DATA_DEPENDENT_BRANCHING
    default_applicability = Applicability.UNSAFE
    valid = ("import torch\n\n@torch.compile\ndef f(x):\n    if x.dim() != 2:\n        raise ValueError('2-D only')\n    return x\n",)
    invalid = (
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    if torch.isnan(x).any():\n        raise ValueError('nan')\n    return x\n",
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    torch._assert_async(~torch.isnan(x).any(), 'nan')\n    return x\n",
            unsafe=True,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced in ctx.traced_nodes(nodes.If):
            if not only_raises(node.body) or node.orelse:
                continue
            parts = tensor_condition_parts(ctx.values, node.test)
            if not parts:
                continue
            fix = predicated_fix(ctx.analysis, "validation_guard", node, "Check on the device with `torch._assert_async`")
            for index, part in enumerate(parts):
                message = f"validation guard on a tensor value `{snippet(part)}` causes a graph break"
                message += gate_note(ctx.values, part)
                yield ctx.report(part, message, traced, fix if index == 0 else None)
