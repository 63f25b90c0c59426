"""GM104: ``if <tensor>: raise ...`` validation guards."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import only_raises, snippet, tensor_condition_parts
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic
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
    Detection only for now. The planned fix is unsafe: the exception type
    changes and, on CUDA, the error is reported asynchronously.
    """

    code = "GM104"
    name = "tensor-validation-guard"
    summary = "`if <tensor>: raise` splits the graph to validate"
    dynamo_gb = DATA_DEPENDENT_BRANCHING
    valid = ("import torch\n\n@torch.compile\ndef f(x):\n    if x.dim() != 2:\n        raise ValueError('2-D only')\n    return x\n",)
    invalid = (
        Example("import torch\n\n@torch.compile\ndef f(x):\n    if torch.isnan(x).any():\n        raise ValueError('nan')\n    return x\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced in ctx.traced_nodes(nodes.If):
            if not only_raises(node.body) or node.orelse:
                continue
            for part in tensor_condition_parts(ctx.values, node.test):
                yield ctx.report(part, f"validation guard on a tensor value `{snippet(part)}` causes a graph break", traced)
