"""GM101: ``if``/``elif`` on a tensor's value."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import only_raises, snippet, tensor_condition_parts
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Applicability, Diagnostic
from graphmend_lint.fixes.predicate import is_elif, predicated_fix
from graphmend_lint.rules.base import Example, Rule

DATA_DEPENDENT_BRANCHING = {"GB0170": "Data-dependent branching"}
FIX_MESSAGE = "Select with `torch.where` instead of branching"


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
    The fix rewrites the `if` as selects, `x = torch.where(c, a, b)`, so Dynamo
    traces both sides: when both branches assign (one `where` per name,
    `elif` chains nest), for an `else`-less update (`x = torch.where(c, f(x), x)`),
    when both branches return (tuples element-wise), when the branches end in
    the same statement (it runs once, after the select) or in the same call
    with different tensor arguments (the arguments are selected).

    It is **safe** only when both selected values are already-computed names,
    attributes or integer arithmetic over the same single tensor, so the dtype
    cannot change. Otherwise it is **unsafe**: both sides are now computed, which
    costs time, and a side that produced NaN or inf where it was not taken can
    now poison gradients through `where`; mixed dtypes are promoted.

    No fix is offered (the message says why) when a branch has a side effect,
    control leaves one branch only (`return`, `raise`, `break`, `continue`),
    a value is `None` or not a tensor, a value calls something the linter
    cannot prove pure, indexes with a tensor, or reads a name the rewrite
    re-binds first.
    """

    code = "GM101"
    name = "tensor-dependent-branch"
    summary = "`if` on a tensor value splits the graph"
    dynamo_gb = DATA_DEPENDENT_BRANCHING
    default_applicability = Applicability.UNSAFE
    valid = (
        "import torch\n\n@torch.compile\ndef f(x):\n    if x.shape[0] > 1:\n        x = x * 2\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x, mask=None):\n    if mask is not None:\n        x = x * mask\n    return x\n",
        "import torch\n\ndef f(x):\n    if x.sum() > 0:\n        x = x * 2\n    return x\n",
    )
    invalid = (
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    if x.sum() > 0:\n        x = x * 2\n    return x\n",
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    x = torch.where(x.sum() > 0, x * 2, x)\n    return x\n",
        ),
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    if x.mean() > 0:  # positive\n        y = x.relu()\n"
            "    else:\n        y = x.sigmoid()\n    return y\n",
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    # positive\n"
            "    y = torch.where(x.mean() > 0, x.relu(), x.sigmoid())\n    return y\n",
            unsafe=True,
        ),
        Example("import torch\n\n@torch.compile\ndef f(x):\n    y = x.max()\n    if y > 3 and x.mean() < 0:\n        return x\n    return -x\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced in ctx.traced_nodes(nodes.If):
            if only_raises(node.body) and not node.orelse:
                continue  # GM104's case
            parts = tensor_condition_parts(ctx.values, node.test)
            if not parts:
                continue
            fix = None if is_elif(ctx.analysis, node) else predicated_fix(ctx.analysis, "if_statement", node, FIX_MESSAGE)
            for index, part in enumerate(parts):
                message = f"branch on a tensor value `{snippet(part)}` causes a graph break"
                yield ctx.report(part, message, traced, fix if index == 0 else None)
