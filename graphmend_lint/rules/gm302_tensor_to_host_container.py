"""GM302: a tensor's values forced into a Python list or a host NumPy value."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.captured_flow import tolist_escape
from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.dynamo_settings import CAPTURE_SCALAR_OUTPUTS, setting_on
from graphmend_lint.analysis.host_values import (
    SCALAR_BUILTINS,
    builtin_name,
    condition_operands,
    is_integer_tensor,
    method_call,
    numpy_origin,
    untyped_array_receiver,
)
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.capture_switch import scalar_capture_fix
from graphmend_lint.rules.base import Example, Rule, RuleOption, switch_example
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

    * `t.tolist()` on a tensor, or on a value of unknown kind (a library
      call's result, an untyped parameter's element): of what compiled code
      meets, only tensors and NumPy arrays have `.tolist()`, and it breaks
      on both (measured); not when a class of the same file defines a
      `tolist` method;
    * a NumPy array made from a tensor (`t.numpy()`, `t.cpu().numpy()`,
      `np.asarray(t)`, `np.array(t)`), or an item a loop takes from one
      (`for n in t.cpu().numpy()`: a NumPy scalar, a 0-d tensor to Dynamo),
      when it reaches Python: `.tolist()`, `.item()`,
      `int()`/`float()`/`bool()`/`complex()`, or an `if`/`while` test.

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
    Display-only, except for one case: what the values are needed for
    decides the rewrite. For integer tensors
    `torch._dynamo.config.capture_scalar_outputs = True` traces `tolist()`
    and `int()` as unbacked symbols (the host sync stays); float `tolist()`
    is not traced under any setting. When the list of an integer `tolist()`
    is only ever used as the sizes of `x.split(...)` (or its `len`), followed
    through names, tuples, returns to this file's callers and arguments to
    this file's functions and submodules (jetmoe's router returning its
    expert sizes to the experts modules that split by them), and nothing
    else in the file needs a captured number, the rule offers that switch
    as an **unsafe** fix, written once after the imports: it is
    process-wide, the host sync stays, and a caller in another file that
    branches on the list would break there. Eager behaviour is unchanged.
    Where a use stops the walk (an element read as a number, a loop over
    the list, a call it cannot resolve), the advice says which.
    """

    code = "GM302"
    name = "tensor-to-host-container"
    summary = "`.tolist()` / NumPy values forced into Python split the graph"
    dynamo_gb = gb_types("GB0109", "GB0033", "GB0170")
    options = {
        "capture-scalar-outputs": RuleOption(
            False,
            "the program turns `capture_scalar_outputs` on somewhere the linter cannot see: Dynamo then traces "
            "`tolist()` of an integer tensor (measured, torch 2.13) and the rule is silent on it",
        )
    }
    valid = (
        _HEADER + "    a = x.numpy()\n    b = np.asarray(x) * 2\n    return x + 1, a, b.sum()\n",
        _HEADER + "    sizes = [1, 2, 3]\n    return x * len(sizes), list(x.shape), sizes.copy()\n",
        "import numpy as np\nimport torch\n\n\ndef f(x):\n    return float(x.numpy().sum()), x.tolist()\n",
        _HEADER.replace("import torch\n", "import torch\n\ntorch._dynamo.config.capture_scalar_outputs = True\n", 1)
        + "    return x.t().split(x.long().sum(0).tolist())\n",
        # a class of this file has `.tolist()`: the untyped receiver may be one of its instances
        "import torch\nfrom elsewhere import load\n\n\nclass Spans:\n    def tolist(self):\n        return []\n\n\n"
        "@torch.compile\ndef f(x):\n    return x, load(x).tolist()\n",
    )
    invalid = (
        Example(_HEADER + "    return x.tolist()\n"),
        # only arrays have `.tolist()`: a library call's result needs no typing
        Example("import torch\nfrom elsewhere import load\n\n\n@torch.compile\ndef f(x):\n    return load(x).tolist()\n"),
        Example(_HEADER + "    a = x.cpu().numpy()\n    return x * float(a.sum())\n"),
        Example(_HEADER + "    a = np.asarray(x)\n    if a.any():\n        x = x + 1\n    return x\n"),
        # TimesNet: the periods come back from a helper in a tuple, then decide the padding
        Example(
            "import torch\n\n\ndef periods(x):\n    top = torch.topk(x.mean(0), 2)[1].cpu().numpy()\n"
            "    return x.shape[0] // top, x.mean(-1)\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
            "    period_list, weight = periods(x)\n    if 12 % period_list[0] != 0:\n        x = x + 1\n    return x * weight\n"
        ),
        Example(_HEADER + "    return x.numpy().tolist()\n"),
        # an integer list used only as split sizes: the capture switch traces it (unsafe, process-wide)
        switch_example(_HEADER + "    sizes = (x > 0).long().sum(0).tolist()\n    return x.t().split(sizes)\n", CAPTURE_SCALAR_OUTPUTS),
        # a size read as a number: under the switch the break would only move; the advice says so
        Example(_HEADER + "    sizes = (x > 0).long().sum(0).tolist()\n    return x.t().split(sizes), sizes[0] + 1\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced in ctx.traced_nodes(nodes.Call, nodes.If, nodes.While, nodes.IfExp):
            for forced, message in self._forced(ctx, node):
                yield ctx.report(forced, message, traced, self._fix(ctx, forced))

    def _fix(self, ctx: RuleContext, forced: nodes.NodeNG) -> Fix:
        """The capture switch for an integer ``.tolist()`` whose numbers nothing needs, else advice (with why not)."""
        if not self._integer_tolist(ctx, forced):
            return KEEP_ON_DEVICE
        switch = scalar_capture_fix(ctx.analysis)
        if switch is not None:
            return switch
        escape = tolist_escape(ctx.analysis, forced)
        return KEEP_ON_DEVICE if escape is None else Fix.advice(f"{KEEP_ON_DEVICE.message}; here {escape}")

    @staticmethod
    def _integer_tolist(ctx: RuleContext, node: nodes.NodeNG) -> bool:
        tolist = method_call(node, "tolist")
        return tolist is not None and is_integer_tensor(ctx.values, tolist.func.expr)

    def _forced(self, ctx: RuleContext, node: nodes.NodeNG) -> Iterator[tuple[nodes.NodeNG, str]]:
        """The sub-expressions of *node* that force tensor values into Python, with messages.

        Under ``capture_scalar_outputs`` an integer ``.tolist()`` is traced (no break).
        """
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
                if self._integer_tolist(ctx, node) and setting_on(values, ctx.options, CAPTURE_SCALAR_OUTPUTS):
                    return
                yield node, f"`.tolist()` copies `{snippet(receiver)}` to a Python list: graph break and host sync"
                return
            origin = numpy_origin(values, receiver)
            if origin is not None:
                yield node, (
                    f"`.{host.func.attrname}()` forces a NumPy array made from a tensor (line {origin.lineno}) "
                    "into Python: graph break"
                )
            elif host.func.attrname == "tolist" and untyped_array_receiver(values, host.func):
                yield node, (
                    f"`.tolist()` copies `{snippet(receiver)}` (a tensor or a NumPy array: nothing else compiled "
                    "code meets has `.tolist()`) to a Python list: graph break and host sync"
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
