"""GM103: ``a if <tensor> else b``."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import tensor_condition_parts
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.fixes.predicate import Predicator, predicated_fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types


class TensorDependentConditionalExpression(Rule):
    """## What it does
    Flags a conditional expression `a if c else b` whose condition `c` depends
    on a tensor's value.

    ## Why is this bad
    It is an `if` in disguise: Dynamo needs a Python bool, so it breaks the
    graph and syncs with the device.

    ## Example
    ```python
    y = x + 1 if x.mean() > 0 else x - 1
    ```

    ## Use instead
    ```python
    y = torch.where(x.mean() > 0, x + 1, x - 1)
    ```

    ## Fix safety
    The fix rewrites the expression as `torch.where(c, a, b)` when at least one
    side is a tensor and neither side has side effects. It is **safe** only
    when both sides are names, attributes or integer arithmetic over the same
    single tensor; otherwise **unsafe**: both sides are computed, NaN or inf
    on the side not taken can reach gradients, and a Python-number side
    becomes a tensor.
    """

    code = "GM103"
    name = "tensor-dependent-conditional-expression"
    summary = "`a if <tensor> else b` splits the graph"
    dynamo_gb = gb_types("GB0170")
    valid = ("import torch\n\n@torch.compile\ndef f(x):\n    return x * 2 if x.dim() == 2 else x\n",)
    invalid = (
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    return x + 1 if x.mean() > 0 else x - 1\n",
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    return torch.where(x.mean() > 0, x + 1, x - 1)\n",
        ),
        # both sides are computed, so a NaN on the side not taken can reach gradients: unsafe
        Example(
            "import torch\n\n@torch.compile\ndef f(x, y):\n    return x.relu() if x.mean() > 0 else y.sigmoid()\n",
            fixed="import torch\n\n@torch.compile\ndef f(x, y):\n    return torch.where(x.mean() > 0, x.relu(), y.sigmoid())\n",
            unsafe=True,
        ),
        # declined (display-only): `None` is not a tensor to select
        Example("import torch\n\n@torch.compile\ndef f(x):\n    return x if x.sum() > 0 else None\n"),
        # a schedule entry or the timestep nothing types (diffusers' LCM step): a tensor on that path;
        # display-only, since on the other the test may be a Python bool
        Example(
            "import torch\n\n\nclass Scheduler:\n    def __init__(self):\n"
            "        self.alphas = torch.linspace(1.0, 0.1, 20)\n"
            "        self.timesteps = torch.tensor([19, 14, 9, 4])\n\n"
            "    def step(self, sample, timestep, index):\n        if index + 1 < len(self.timesteps):\n"
            "            prev = self.timesteps[index + 1]\n        else:\n            prev = timestep\n"
            "        alpha = self.alphas[prev] if prev >= 0 else self.alphas[0]\n"
            "        return sample * alpha\n\n\nscheduler = Scheduler()\n\n\n@torch.compile\n"
            "def f(sample, t):\n    return scheduler.step(sample, t, 0)\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced in ctx.traced_nodes(nodes.IfExp):
            parts = tensor_condition_parts(ctx.values, node.test)
            if not parts:
                continue
            fix = predicated_fix(ctx.analysis, Predicator.conditional_expression, node, "Select with `torch.where`")
            message = "conditional expression on a tensor value `{}` causes a graph break"
            yield from ctx.report_condition(parts, message, traced, fix)
