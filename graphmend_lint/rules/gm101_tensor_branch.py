"""GM101: ``if``/``elif`` on a tensor's value."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import only_raises, snippet, tensor_condition_parts
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.rules.base import Example, Rule

DATA_DEPENDENT_BRANCHING = {"GB0170": "Data-dependent branching"}


class TensorDependentBranch(Rule):
    """## What it does
    Flags an `if` or `elif` whose condition depends on the *value* of a tensor,
    such as `if x.sum() > 0:` or `if torch.any(mask):`. Each operand of
    `and`/`or` that is a tensor is flagged on its own, because Dynamo breaks
    once per operand.

    ## Why is this bad
    To choose a branch, Python needs a real bool, so Dynamo must run the graph
    so far, copy the result to the host and resume in a new graph. That is a
    graph break plus a device-to-host sync on every call. Branches on shapes,
    dtypes, `is None` or config flags are fine: Dynamo specialises on them.

    ## Example
    ```python
    @torch.compile
    def f(x):
        if x.sum() > 0:
            y = x * 2
        else:
            y = x - 1
        return y
    ```

    ## Use instead
    Compute both sides and select on the device:
    ```python
    @torch.compile
    def f(x):
        y = torch.where(x.sum() > 0, x * 2, x - 1)
        return y
    ```
    or `torch.cond` when the branches are expensive.

    ## Fix safety
    Detection only for now; the predication fix is planned.
    """

    code = "GM101"
    name = "tensor-dependent-branch"
    summary = "`if` on a tensor value splits the graph"
    dynamo_gb = DATA_DEPENDENT_BRANCHING
    valid = (
        "import torch\n\n@torch.compile\ndef f(x):\n    if x.shape[0] > 1:\n        x = x * 2\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x, mask=None):\n    if mask is not None:\n        x = x * mask\n    return x\n",
        "import torch\n\ndef f(x):\n    if x.sum() > 0:\n        x = x * 2\n    return x\n",
    )
    invalid = (
        Example("import torch\n\n@torch.compile\ndef f(x):\n    if x.sum() > 0:\n        x = x * 2\n    return x\n"),
        Example("import torch\n\n@torch.compile\ndef f(x):\n    y = x.max()\n    if y > 3 and x.mean() < 0:\n        return x\n    return -x\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced in ctx.traced_nodes(nodes.If):
            if only_raises(node.body) and not node.orelse:
                continue  # GM104's case
            for part in tensor_condition_parts(ctx.values, node.test):
                yield ctx.report(
                    part, f"branch on a tensor value `{snippet(part)}` causes a graph break", traced
                )
