"""GM502: ``copy.deepcopy`` of tensors or modules inside code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.module_attributes import constructor_of, is_tensor_like
from graphmend_lint.analysis.values import ValueOracle, enclosing_class
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.tensor_copy import detach_clone_fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

NO_FIX = Fix.advice(
    "no automatic fix: copy the module (or container) once, outside the compiled function",
)
_HEADER = "import copy\n\nimport torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"


def _is_module(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """``self`` of an ``nn.Module`` subclass, or a ``torch.nn`` layer built in the class or the function."""
    if isinstance(node, nodes.Name) and node.name == "self":
        klass = enclosing_class(node)
        return klass is not None and "forward" in klass.locals
    module, _, name = (constructor_of(values, node) or "").rpartition(".")
    return module.startswith("torch.nn") and name[:1].isupper() and name not in {"Parameter", "Buffer"}


def copies_tensors(values: ValueOracle, node: nodes.NodeNG) -> str | None:
    """What tensor-holding object *node* is: "a tensor", "a module", "a container of tensors", else ``None``."""
    if is_tensor_like(values, node):
        return "a tensor"
    if _is_module(values, node):
        return "a module"
    if isinstance(node, (nodes.List, nodes.Tuple, nodes.Set)):
        elements = node.elts
    elif isinstance(node, nodes.Dict):
        elements = [value for _, value in node.items]
    else:
        return None
    return "a container of tensors" if any(is_tensor_like(values, e) for e in elements) else None


class TensorDeepcopy(Rule):
    """## What it does
    Flags `copy.deepcopy(...)` of a tensor, a module (`self`, a submodule), or
    a list/tuple/dict literal holding a tensor, in code that `torch.compile`
    traces. Deep copies of plain Python values (a config dict) are traced and
    are not flagged.

    ## Why is this bad
    Dynamo does not deep-copy tensors: it ends the graph and runs the copy
    eagerly (GB4198, "Attempted to copy.deepcopy a tensor"). Dynamo reports
    the break inside `copy.py` (where `deepcopy` meets the tensor), not at
    your call; this rule reports the call.

    ## Example
    ```python
    @torch.compile
    def f(x):
        y = x * 2
        snapshot = copy.deepcopy(y)
        return y + snapshot
    ```

    ## Use instead
    ```python
    @torch.compile
    def f(x):
        y = x * 2
        snapshot = y.detach().clone()
        return y + snapshot
    ```

    ## Fix safety
    `copy.deepcopy(t)` of a tensor becomes `t.detach().clone()`: same
    values, dtype and device, no autograd history. It is **unsafe**: a leaf
    that requires grad deep-copies into a new leaf that requires grad, while
    `detach().clone()` does not require grad; attributes set on the tensor
    object and a subclass's `__deepcopy__` are not carried over. Modules and
    containers get advice only.
    """

    code = "GM502"
    name = "tensor-deepcopy"
    summary = "`copy.deepcopy` of a tensor or module in compiled code splits the graph"
    dynamo_gb = gb_types("GB4198")
    valid = (
        _HEADER + "    cfg = copy.deepcopy({'a': 1})\n    return x * cfg['a']\n",
        "import copy\n\nimport torch\n\n\ndef f(x):\n    return copy.deepcopy(x)\n",
        _HEADER + "    return x.detach().clone(), copy.copy([1, 2])\n",
    )
    invalid = (
        Example(
            _HEADER + "    y = x * 2\n    return y + copy.deepcopy(y)\n",
            fixed=_HEADER + "    y = x * 2\n    return y + y.detach().clone()\n",
            unsafe=True,
        ),
        Example(
            "from copy import deepcopy\n\nimport torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n\n"
            "    def forward(self, x):\n        fc = deepcopy(self.fc)\n        return fc(x)\n\n\n"
            "model = torch.compile(M())\n"
        ),
        Example(_HEADER + "    state = copy.deepcopy([x, 1])\n    return state[0]\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for call, traced in ctx.traced_nodes(nodes.Call):
            if ctx.values.qualified_name(call.func) != "copy.deepcopy" or len(call.args) != 1:
                continue
            copied = call.args[0]
            what = copies_tensors(ctx.values, copied)
            if what is None:
                continue
            fix = detach_clone_fix(ctx.analysis, call, copied) if what == "a tensor" else NO_FIX
            message = f"`copy.deepcopy` of {what} in compiled code causes a graph break"
            yield ctx.report(call, message, traced, fix)
