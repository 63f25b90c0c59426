"""GM302: a tensor's values forced into a Python list or a host NumPy value."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.host_values import (
    SCALAR_BUILTINS,
    builtin_name,
    condition_operands,
    method_call,
    numpy_origin,
)
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

KEEP_ON_DEVICE = Fix.advice(
    (
        "no source fix: keep the values in a tensor and use tensor ops; for integer tensors "
        "`torch._dynamo.config.capture_scalar_outputs = True` traces the values as unbacked symbols "
        "(the host sync stays; float `tolist()` is never traced)"
    ),
)
_HEADER = "import numpy as np\nimport torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"


class TensorToHostContainer(Rule):
    """## What it does
    Flags code that forces a tensor's values into Python containers or host
    NumPy values inside `torch.compile`d code:

    * `t.tolist()` on a tensor;
    * a NumPy array made from a tensor (`t.numpy()`, `t.cpu().numpy()`,
      `np.asarray(t)`, `np.array(t)`) when it reaches Python: `.tolist()`,
      `.item()`, `int()`/`float()`/`bool()`/`complex()`, or an `if`/`while`
      test.

    ## Why is this bad
    Dynamo traces NumPy arrays made from tensors *as tensors*, so `.numpy()`
    and NumPy arithmetic on the result are free. The break comes where the
    values must become Python objects: `tolist()` on a float tensor (GB0109),
    any element forced into a Python number (GB0033), or a branch on the
    array (GB0170). Each break also waits for the device. A `.numpy()` whose
    result only stays NumPy, or is returned, is not flagged: it does not break.

    ## Example
    ```python
    @torch.compile
    def f(x):
        scores = x.softmax(-1).numpy()
        if scores.max() > 0.5:          # GB0170
            x = x * 2
        return x, x.tolist()            # GB0109
    ```

    ## Use instead
    Stay in tensors (`torch.where(x.softmax(-1).max() > 0.5, x * 2, x)`),
    and convert to Python only after the compiled function returns.

    ## Fix safety
    Display-only: what the values are needed for decides the rewrite. For
    integer tensors `torch._dynamo.config.capture_scalar_outputs = True`
    traces `tolist()` and `int()` as unbacked symbols (the host sync stays);
    float `tolist()` is not traced under any setting.
    """

    code = "GM302"
    name = "tensor-to-host-container"
    summary = "`.tolist()` / NumPy values forced into Python split the graph"
    dynamo_gb = gb_types("GB0109", "GB0033", "GB0170")
    valid = (
        _HEADER + "    a = x.numpy()\n    b = np.asarray(x) * 2\n    return x + 1, a, b.sum()\n",
        _HEADER + "    sizes = [1, 2, 3]\n    return x * len(sizes), list(x.shape), sizes.copy()\n",
        "import numpy as np\nimport torch\n\n\ndef f(x):\n    return float(x.numpy().sum()), x.tolist()\n",
    )
    invalid = (
        Example(_HEADER + "    return x.tolist()\n"),
        Example(_HEADER + "    a = x.cpu().numpy()\n    return x * float(a.sum())\n"),
        Example(_HEADER + "    a = np.asarray(x)\n    if a.any():\n        x = x + 1\n    return x\n"),
        Example(_HEADER + "    return x.numpy().tolist()\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced in ctx.traced_nodes(nodes.Call, nodes.If, nodes.While, nodes.IfExp):
            for forced, message in self._forced(ctx, node):
                yield ctx.report(forced, message, traced, KEEP_ON_DEVICE)

    def _forced(self, ctx: RuleContext, node: nodes.NodeNG) -> Iterator[tuple[nodes.NodeNG, str]]:
        """The sub-expressions of *node* that force tensor values into Python, with messages."""
        values = ctx.values
        if not isinstance(node, nodes.Call):
            for operand in condition_operands(node.test):
                origin = numpy_origin(values, operand)
                if origin is not None:
                    yield operand, f"branch on a NumPy array made from a tensor (line {origin.lineno}): graph break"
            return
        host = method_call(node, "tolist", "item")
        if host is not None:
            receiver = host.func.expr
            if host.func.attrname == "tolist" and values.is_tensor(receiver):
                yield node, f"`.tolist()` copies `{snippet(receiver)}` to a Python list: graph break and host sync"
                return
            origin = numpy_origin(values, receiver)
            if origin is not None:
                yield node, (
                    f"`.{host.func.attrname}()` forces a NumPy array made from a tensor (line {origin.lineno}) "
                    "into Python: graph break"
                )
            return
        builtin = builtin_name(node)
        if builtin in SCALAR_BUILTINS and len(node.args) == 1:
            origin = numpy_origin(values, node.args[0])
            if origin is not None:
                yield node, (
                    f"`{builtin}()` forces a NumPy array made from a tensor (line {origin.lineno}) "
                    "into Python: graph break"
                )
