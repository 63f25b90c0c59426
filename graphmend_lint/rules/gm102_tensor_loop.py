"""GM102: ``while`` on a tensor's value."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet, tensor_condition_parts
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types


#: Comprehensions whose filters Dynamo was measured to branch on (generator expressions were not measured).
_FILTERED = (nodes.ListComp, nodes.SetComp, nodes.DictComp)


class TensorDependentLoop(Rule):
    """## What it does
    Flags a `while` loop whose condition depends on the value of a tensor,
    and the `if` filter of a list, set or dict comprehension that does
    (`[i for i in indices if i != blank]` over a tensor's elements).

    ## Why is this bad
    Every evaluation of the condition is a data-dependent branch: Dynamo
    breaks the graph at the `while` line each time round, syncing with the
    device on every iteration. A comprehension's filter is the same
    data-dependent branch (GB0170), once per element, logged where the
    comprehension starts (a comparison: at its own line).

    ## Example
    ```python
    @torch.compile
    def f(x):
        while x.sum() < 100:
            x = x * 2
        return x
    ```

    ## Use instead
    Loop a static number of times and mask the updates
    (`x = torch.where(x.sum() < 100, x * 2, x)`), or use
    `torch._higher_order_ops.while_loop`.

    ## Fix safety
    No automatic fix: the number of iterations is data-dependent.
    """

    code = "GM102"
    name = "tensor-dependent-loop"
    summary = "`while` or a comprehension filter on a tensor value breaks the graph on every iteration"
    dynamo_gb = gb_types("GB0170")
    valid = (
        "import torch\n\n@torch.compile\ndef f(x, n: int):\n    i = 0\n    while i < n:\n        x = x * 2\n        i += 1\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x, names: list):\n    rows = [r for r in x if r.shape[0] > 1]\n"
        "    return rows, [n for n in names if n]\n",
    )
    invalid = (
        Example("import torch\n\n@torch.compile\ndef f(x):\n    while x.sum() < 100:\n        x = x * 2\n    return x\n", advice=False),
        Example(
            "import torch\n\n@torch.compile\ndef f(x: torch.Tensor, blank: int):\n"
            "    ids = torch.argmax(x, dim=-1)\n    return [i for i in ids if i != blank]\n",
            advice=False,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced in ctx.traced_nodes(nodes.While):
            for part in tensor_condition_parts(ctx.values, node.test):
                yield ctx.report(part, f"`while` on a tensor value `{snippet(part)}` breaks the graph", traced)
        for comprehension, traced in ctx.traced_nodes(nodes.Comprehension):
            if not isinstance(comprehension.parent, _FILTERED):
                continue
            for test in comprehension.ifs:
                for part in tensor_condition_parts(ctx.values, test):
                    message = f"comprehension filter on a tensor value `{snippet(part)}` breaks the graph"
                    yield ctx.report(part, message, traced)
