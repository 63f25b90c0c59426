"""GM506: building an ``nn.Module`` or an ``nn.Parameter`` inside code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.dead_branches import branch_never_taken
from graphmend_lint.analysis.module_construction import creates_parameter, init_breaks, module_lineage
from graphmend_lint.analysis.scope import TracedFunction
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

NO_FIX = Fix.advice(
    "no automatic fix: build the module in `__init__` and switch between prebuilt modules in `forward`",
)
_MODULE = (
    "import torch\nfrom torch import nn\n\n\nclass Inner(nn.Module):\n    def __init__(self, d):\n"
    "        super().__init__()\n        self.proj = {layer}\n\n\nclass Outer(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.inner = Inner(4)\n\n"
    "    def forward(self, x: torch.Tensor):\n        {statement}\n        return self.inner.proj(x)\n\n\n"
    "model = torch.compile(Outer())\n"
)


def _site(ctx: RuleContext, call: nodes.Call) -> str:
    """``(`set_attention_type`, line 1093)``: the traced function and line that build the object."""
    function = call.frame()
    name = getattr(function, "name", "<module>")
    return f"(`{name}`, line {ctx.analysis.start_of(call).line})"


def _through_a_constructor(traced: TracedFunction) -> bool:
    """Traced only because a class is built in traced code: its ``__init__``, or what that calls. For a module
    class, Dynamo gives up on ``__init__`` at its first parameter and runs the rest eagerly; the construction
    site is where this rule reports (below)."""
    return any(part.endswith(".__init__") for part in (*traced.chain, traced.qualname))


class ModuleConstruction(Rule):
    """## What it does
    Flags the construction of an `nn.Module` in code that `torch.compile`
    traces: a `torch.nn` layer that owns parameters (`nn.Linear`,
    `nn.LayerNorm`, ...) or an `nn.Parameter` built there directly, and a
    module class of the same file whose `__init__` builds one. transformers'
    BigBird switches to full attention on short inputs by building a new
    attention module inside `forward` (`set_attention_type`).

    ## Why is this bad
    Dynamo cannot trace the creation of a parameter (GB0264, "Attempted to use
    `torch.nn.Parameter()` constructor with Dynamo"). For a module class of
    the file the break is logged inside its `__init__`, at the first layer
    that creates a parameter; Dynamo then retries that `__init__` as a frame
    of its own, fails on the module it has not initialized yet (GB0119,
    "Uninitialized nn.Module", at `super().__init__()`) and runs the rest of
    `__init__` eagerly. An `__init__` that calls `nn.Module.__init__(self)`
    breaks on that call at once (GB0007, then GB0119), parameters or not; so
    does an `__init__` that calls something Dynamo skips before it creates a
    parameter (PSMNet's `disparityregression` builds `Variable(...)`: GB0007
    there, GM507's, then GB0119 at `super(disparityregression,
    self).__init__()`, measured). The
    findings sit on those lines, and the message names the compiled
    function and line that build the module. A module whose `__init__`
    calls `super().__init__()` and creates no parameter (only `nn.Dropout`,
    plain attributes) is traced without a break and is not flagged
    (measured, torch 2.13).

    The rule stays quiet when it cannot prove the class is an `nn.Module`
    (its bases must resolve in the file to `torch.nn.Module`), when a
    parameter is created only inside a block of `__init__`, or when another
    module class is built first. It also skips a construction in a branch
    `if value == "text":` (or its `else`) when every call of the function in
    the file passes a string that does not take it: BigBird's compiled
    `forward` only asks for `"original_full"`, so the block-sparse module
    built in the `else` never is.

    ## Example
    ```python
    class Attention(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.query = nn.Linear(config.hidden_size, config.hidden_size)

        def set_type(self, value):
            if value != self.type:
                self.type = value
                self.self = Attention(self.config)
    ```

    ## Use instead
    Build every variant once in `__init__` and choose between them in
    `forward`:
    ```python
        def __init__(self, config):
            super().__init__()
            self.full = FullAttention(config)
            self.sparse = SparseAttention(config)
    ```

    ## Fix safety
    No automatic fix (display only): moving a construction changes which
    parameters the model owns, its `state_dict()` and what the optimizer
    updates, and which variants to build in advance depends on the program.
    """

    code = "GM506"
    name = "module-construction-in-forward"
    summary = "building an `nn.Module` or `nn.Parameter` in compiled code splits the graph"
    dynamo_gb = gb_types("GB0264", "GB0119", "GB0007")
    valid = (
        _MODULE.format(layer="nn.Linear(d, d)", statement="x = x + 1"),
        _MODULE.format(layer="nn.Dropout(0.1)", statement="self.inner = Inner(4)"),
        _MODULE.format(layer="nn.LayerNorm(d, elementwise_affine=False)", statement="self.inner = Inner(4)"),
        _MODULE.format(layer="nn.Linear(d, d)", statement="self.inner = make_inner(4)"),
        _MODULE.format(layer="nn.Linear(d, d)", statement="self.inner = Inner(4)").replace(
            "model = torch.compile(Outer())", "model = Outer()"
        ),
    )
    invalid = (
        Example(_MODULE.format(layer="nn.Linear(d, d)", statement="self.inner = Inner(4)")),
        Example(_MODULE.format(layer="nn.Linear(d, d)", statement="scale = nn.Parameter(torch.ones(4))")),
        Example(
            "import torch\nfrom torch import nn\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
            "    norm = nn.LayerNorm(4)\n    return norm(x)\n"
        ),
        # no parameter, but a call Dynamo skips (GM507 reports it too), after the Python 2 spelling of super()
        Example(
            "import torch\nfrom torch import nn\nfrom torch.autograd import Variable\n\n\nclass Regression(nn.Module):\n"
            "    def __init__(self, n):\n        super(Regression, self).__init__()\n"
            "        self.disp = Variable(torch.arange(n).float(), requires_grad=False)\n\n"
            "    def forward(self, x):\n        return (x * self.disp).sum(-1)\n\n\n"
            "@torch.compile\ndef f(x: torch.Tensor):\n    return Regression(4)(x)\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        seen: set[nodes.NodeNG] = set()  # classes asked about, and the __init__ lines already reported
        for call, traced in ctx.traced_nodes(nodes.Call):
            if not isinstance(call.func, (nodes.Name, nodes.Attribute)) or branch_never_taken(call):
                continue
            if _through_a_constructor(traced):
                continue
            layer = creates_parameter(ctx.values, call)
            if layer is not None:
                message = (
                    f"`{layer}` is constructed in compiled code {_site(ctx, call)}: Dynamo cannot trace creating "
                    f"a parameter; build it in `__init__`"
                )
                yield ctx.report(call, message, traced, NO_FIX)
                continue
            lineage = module_lineage(ctx.values, call.func)
            if lineage is None or lineage[0] in seen:
                continue
            seen.add(lineage[0])
            breaks = init_breaks(ctx.values, lineage)
            if breaks is None or breaks.module_init in seen:
                continue  # unsure, or a subclass sharing an __init__ already reported
            seen.add(breaks.module_init)
            built = (
                f"`{lineage[0].name}` is constructed in compiled code {_site(ctx, call)}: Dynamo cannot trace "
                f"an nn.Module's construction"
            )
            advice = "; build it in `__init__` and switch between prebuilt modules"
            if breaks.refused is not None:
                why = f"its `__init__` calls `{snippet(breaks.refused.func)}`, which Dynamo skips, and is retried as a frame of its own"
            elif breaks.parameter is None:
                why = "`nn.Module.__init__(self)` is skipped by Dynamo"
            else:
                why = "its `__init__` is retried as a frame of its own"
            yield ctx.report(breaks.module_init, f"{built} ({why}){advice}", traced, NO_FIX, gate_at=call)
            if breaks.parameter is not None:
                creation, layer = breaks.parameter
                message = f"{built} (`{layer}` creates a parameter){advice}"
                yield ctx.report(creation, message, traced, NO_FIX, gate_at=call)
