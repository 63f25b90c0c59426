"""GM515: calling, in compiled code, a module that carries a module-level backward hook."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.ast_resolution import ast_resolution
from graphmend_lint.analysis.backward_hooks import REGISTRATIONS, HookedCall, registrations
from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

NO_FIX = Fix.advice(
    "no automatic fix: compile the hooked module itself (its own call runs eagerly and keeps the hook), turn on "
    "compiled autograd (`torch._dynamo.config.compiled_autograd = True`), or use tensor hooks "
    "(`output.register_hook`), which Dynamo traces"
)
_HOOKED = (
    "import torch\nfrom torch import nn\n\nlayer = nn.Linear(4, 4)\n{setup}\n\n\n@torch.compile\n"
    "def f(x: torch.Tensor):\n    return layer(x * 2) + 1\n"
)
_BLOCK = (
    "import torch\nfrom torch import nn\n\n\nclass Block(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.proj = nn.Linear(4, 4)\n{register}\n"
    "    def forward(self, x):\n        return self.proj(x).relu()\n\n\n"
    "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.block = Block()\n\n"
    "    def forward(self, x):\n        return self.block(x * 2)\n\n\nmodel = torch.compile(Model())\n"
)

#: ``Block.__init__`` hooking every instance.
_SELF_HOOK = "        self.register_full_backward_hook(self._hook)\n\n    def _hook(self, m, gi, go):\n        return None\n"


class BackwardHookedModuleCall(Rule):
    """## What it does
    Flags calls, in code that `torch.compile` traces, of a module on which
    the file registers a module-level backward hook:
    `register_full_backward_hook`, `register_full_backward_pre_hook` or the
    legacy `register_backward_hook`, called on the same variable, on the same
    `self.<attr>` (in `__init__`, or on an instance from outside), or on
    `self` in the module's class (every instance is hooked). Only the first
    call of each hooked module in a function is flagged: Dynamo logs the
    break once.

    ## Why is this bad
    Dynamo does not trace a module-level backward hook without compiled
    autograd: the call of the hooked module breaks the graph
    ("Module-level backwards hooks require compiled autograd.", GB0083; the
    legacy hook breaks with "Tensor with grad_fn()", GB0104; measured, torch
    2.13), whether the hook was registered in `__init__` or from outside, and
    under `torch.no_grad()` too. The module `torch.compile` was given is not
    affected: its own call runs eagerly, and Dynamo traces its `forward` only.

    ## Example
    ```python
    layer = nn.Linear(3, 3)
    layer.register_full_backward_pre_hook(scale_grad)

    @torch.compile
    def f(x):
        return layer(x)
    ```

    ## Use instead
    Compile the hooked module itself (`torch.compile(layer)`), turn on
    compiled autograd, or register a tensor hook on the output
    (`y.register_hook(...)`), which Dynamo traces.

    ## Fix safety
    No automatic fix: each way out changes what runs compiled. The diagnostic
    carries a display-only hint.
    """

    code = "GM515"
    name = "backward-hooked-module-call"
    summary = "calling a module with a backward hook in compiled code splits the graph"
    dynamo_gb = gb_types("GB0083", "GB0104")
    valid = (
        # a forward hook traces
        _HOOKED.format(setup="layer.register_forward_hook(lambda m, i, o: None)"),
        # another module carries the hook
        _HOOKED.format(setup="other = nn.Linear(4, 4)\nother.register_full_backward_hook(lambda m, gi, go: None)"),
        # the hooked module is the compiled one: its own call runs eagerly
        _BLOCK.format(register=_SELF_HOOK).replace("torch.compile(Model())", "torch.compile(Block())"),
    )
    invalid = (
        Example(_HOOKED.format(setup="layer.register_full_backward_pre_hook(lambda m, go: None)")),
        Example(_HOOKED.format(setup="layer.register_backward_hook(lambda m, gi, go: None)")),
        Example(_BLOCK.format(register=_SELF_HOOK)),
        Example(
            _BLOCK.format(register="")
            + "model.block.register_full_backward_hook(lambda m, gi, go: None)\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        if not any(method in ctx.analysis.source.text for method in REGISTRATIONS):
            return
        resolution = ast_resolution(ctx.analysis)
        hooks = registrations(resolution)
        reported: set[tuple[nodes.NodeNG, HookedCall]] = set()
        for call, traced in ctx.traced_nodes(nodes.Call):
            hooked = hooks.hooked_call(call)
            if hooked is None or (call.frame(), hooked) in reported:
                continue
            reported.add((call.frame(), hooked))
            message = (
                f"`{snippet(call.func)}` carries a module backward hook (`{hooked.registration}`, line {hooked.line}), "
                "which Dynamo does not trace unless compiled autograd is on: graph break at the call"
            )
            yield ctx.report(call, message, traced, NO_FIX)
