"""GM516: ``obj.__class__ = Cls`` in code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

NO_FIX = Fix.advice(
    "no automatic fix: swap the class once, outside the compiled function (in `__init__`, or on the model "
    "before `torch.compile`)"
)
_HEADER = (
    "import torch\nfrom torch import nn\n\n\nclass Fused(nn.Linear):\n    pass\n\n\n"
    "class Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.proj = nn.Linear(4, 4)\n{init}\n    def forward(self, x):\n{body}        return self.proj(x)\n\n\n"
    "model = torch.compile(Block())\n"
)


class ClassAssignment(Rule):
    """## What it does
    Flags an assignment to an object's `__class__` (`self.proj.__class__ =
    Fused`, `state.__class__ = Frozen`, `t.__class__ = MyTensor`) in code
    that `torch.compile` traces. Real code swaps the class of a module or a
    state object to change its behaviour in place (quantization and LoRA
    wrappers, "freeze" helpers).

    ## Why is this bad
    Dynamo does not reassign `__class__`: on a module or any other object it
    ends the graph ("__class__ assignment on user-defined object", GB4271),
    and on a tensor it refuses the attribute ("Failed to set tensor
    attribute", GB0058; measured, torch 2.13). Inside a loop the break makes
    Dynamo give up on the whole function.

    ## Example
    ```python
    def forward(self, x):
        if self.fused:
            self.proj.__class__ = FusedLinear
        return self.proj(x)
    ```

    ## Use instead
    Swap the class once, before compiling:
    ```python
    def __init__(self):
        ...
        if self.fused:
            self.proj.__class__ = FusedLinear
    ```
    For a tensor, `t.as_subclass(MyTensor)` returns a new view of the
    subclass.

    ## Fix safety
    No automatic fix: where the swap belongs depends on when the object's
    behaviour must change. The diagnostic carries a display-only hint.
    """

    code = "GM516"
    name = "class-assignment"
    summary = "assigning `__class__` in compiled code splits the graph"
    dynamo_gb = gb_types("GB4271", "GB0058")
    valid = (
        # in __init__, which runs before compiling: nothing to trace
        _HEADER.format(init="        self.proj.__class__ = Fused\n", body=""),
        # reading it traces
        _HEADER.format(init="", body="        kind = self.proj.__class__.__name__\n"),
        # not compiled
        "class A:\n    pass\n\n\nclass B(A):\n    pass\n\n\ndef freeze(obj):\n    obj.__class__ = B\n",
    )
    invalid = (
        Example(_HEADER.format(init="", body="        self.proj.__class__ = Fused\n")),
        Example(
            "import torch\n\n\nclass Tagged(torch.Tensor):\n    pass\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
            "    y = x * 2\n    y.__class__ = Tagged\n    return y\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for target, traced in ctx.traced_nodes(nodes.AssignAttr):
            if target.attrname != "__class__":
                continue
            statement = target.statement()
            if ctx.values.is_tensor(target.expr):
                message = (
                    f"`{snippet(target.expr)}.__class__ = ...` on a tensor in compiled code: Dynamo cannot set "
                    "a tensor's class, so the graph breaks"
                )
            else:
                message = (
                    f"`{snippet(target.expr)}.__class__ = ...` in compiled code: Dynamo does not reassign an "
                    "object's class, so the graph breaks"
                )
            yield ctx.report(statement, message, traced, NO_FIX)
