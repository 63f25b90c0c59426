"""GM523: an in-place shape or autograd change (``x.unsqueeze_(1)``, ``self.mem.detach_()``) of a graph input."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.lookup import outlives_the_frame, reaching_bindings
from graphmend_lint.analysis.scope import TracedFunction
from graphmend_lint.analysis.values import ValueOracle
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.break_sites import break_finder
from graphmend_lint.rules.gb_types import gb_types

#: Tensor methods that change a tensor's view metadata (or detach it) in place; torch 2.13 refuses each on a
#: tensor that enters the graph from outside (measured, GB0148), and traces them on one the graph computed.
METADATA_METHODS = frozenset(
    {"unsqueeze_", "squeeze_", "t_", "transpose_", "swapdims_", "swapaxes_", "as_strided_", "detach_"}
)
#: How many calls deep a parameter is followed back to the compiled function's inputs.
_MAX_DEPTH = 4
NO_FIX = Fix.advice(
    "no automatic fix: use the out-of-place method and rebind (`x = x.unsqueeze(1)`, `self.mem = "
    "self.mem.detach()`); the caller's tensor then keeps its shape, which the in-place form changed"
)
_HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, mask: torch.Tensor):\n"


def _enters_the_graph(
    values: ValueOracle, entries: frozenset[nodes.FunctionDef], receiver: nodes.NodeNG, depth: int = 0
) -> bool:
    """*receiver* is a tensor the compiled region receives rather than computes: a parameter of a compiled
    entry point (one of *entries*, which no traced call runs), or of a function some call passes such a
    tensor for (the call that passes an input breaks), or state kept on an object (``self.mem``,
    ``cls.instances[i].mem``), which Dynamo reads as an input. A local the frame computed, a view of an
    input included, is the graph's own (measured: no break). A function whose calls this file does not
    show is no entry point: xLSTM's step cell squeezes the projections its caller computed."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(receiver, nodes.Attribute):
        return outlives_the_frame(receiver.expr) and not _assigned_before(receiver)
    if not isinstance(receiver, nodes.Name):
        return False
    try:
        bindings = reaching_bindings(receiver)
    except Exception:  # astroid lookups can fail on odd code; then nothing is proven
        return False
    if not bindings or not all(isinstance(binding.parent, nodes.Arguments) for binding in bindings):
        return False
    function = bindings[0].parent.parent
    passed = values.call_site_arguments(function, receiver.name)
    if not passed:
        return function in entries
    return any(_enters_the_graph(values, entries, argument, depth + 1) for argument in passed)


def _assigned_before(receiver: nodes.Attribute) -> bool:
    """The function holding *receiver* (``self.cache``) assigns the same attribute earlier: then the tensor may
    be one the graph computed (``self.cache = x * 2; self.cache.detach_()`` traces, measured)."""
    spelled = receiver.as_string()
    return any(
        target.as_string() == spelled and target.lineno < receiver.lineno
        for target in receiver.frame().nodes_of_class(nodes.AssignAttr)
    )


def _is_entry(traced: TracedFunction) -> bool:
    """Compilation starts at *traced*: its chain holds only why it is compiled and the function itself."""
    return len(traced.chain) == 2


class InputMetadataMutation(Rule):
    """## What it does
    Flags an in-place change of a tensor's view metadata or autograd
    history, `t.unsqueeze_()`, `t.squeeze_()`, `t.t_()`, `t.transpose_()`,
    `t.swapdims_()`, `t.swapaxes_()`, `t.as_strided_()` and `t.detach_()`,
    in code that `torch.compile` traces, on a tensor that enters the graph
    from outside: a parameter of the compiled function (also through
    helpers it passes the tensor to), or state kept on a module or another
    object (`self.mem.detach_()`, snnTorch's reset of every neuron's
    membrane). kornia's Dice loss unsqueezes the caller's mask in place.

    ## Why is this bad
    Dynamo does not apply such a change to a graph input inside the graph:
    it ends the graph at the call ("Unsupported function call (delayed)",
    GB0148; measured, torch 2.13, for every method listed, on parameters,
    buffers and plain tensor attributes). On a tensor the graph computed,
    a view of an input or an attribute the same call assigned first
    included, the same calls trace, unless a graph
    break on every path since made it an input of the resumed frame
    (kornia's mask, returned by a helper that branches on it).

    ## Example
    ```python
    @torch.compile
    def dice(x, mask):
        mask.unsqueeze_(1)
        return (x * mask).sum()
    ```

    ## Use instead
    ```python
    @torch.compile
    def dice(x, mask):
        mask = mask.unsqueeze(1)
        return (x * mask).sum()
    ```

    ## Fix safety
    No automatic fix: the in-place form changes the caller's tensor too
    (its shape, or its autograd history), and the rebinding form does not.
    The diagnostic carries a display-only hint.
    """

    code = "GM523"
    name = "input-metadata-mutation"
    summary = "an in-place shape or detach change of a tensor from outside the graph splits it"
    dynamo_gb = gb_types("GB0148")
    valid = (
        # rebinding the out-of-place result traces
        _HEADER + "    mask = mask.unsqueeze(1)\n    return x * mask\n",
        # a tensor the graph computed, a view of an input included
        _HEADER + "    y = x * 2\n    y.unsqueeze_(0)\n    z = x[0]\n    z.t_()\n    return y, z\n",
        # module state the same call computed first (measured: traces)
        "import torch\nfrom torch import nn\n\n\nclass Cache(nn.Module):\n    def forward(self, x):\n"
        "        self.cache = x * 2\n        self.cache.detach_()\n        return self.cache + 1\n\n\n"
        "model = torch.compile(Cache())\n",
        # a helper given a computed tensor
        "import torch\n\n\ndef grow(t):\n    t.unsqueeze_(0)\n    return t\n\n\n@torch.compile\n"
        "def f(x: torch.Tensor):\n    return grow(x * 2)\n",
    )
    invalid = (
        Example(_HEADER + "    mask.unsqueeze_(1)\n    return x * mask\n"),
        Example(
            "import torch\n\n\ndef grow(t):\n    t.unsqueeze_(0)\n    return t\n\n\n@torch.compile\n"
            "def f(x: torch.Tensor):\n    return grow(x)\n"
        ),
        Example(
            "import torch\nfrom torch import nn\n\n\nclass Neuron(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.mem = torch.zeros(4)\n\n    def forward(self, x):\n"
            "        self.mem.detach_()\n        self.mem = self.mem * 0.9 + x\n        return self.mem\n\n\n"
            "model = torch.compile(Neuron())\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        breaks = None
        entries = frozenset(function for function, traced in ctx.analysis.traced_functions() if _is_entry(traced))
        for call, traced in ctx.traced_nodes(nodes.Call):
            func = call.func
            if not (isinstance(func, nodes.Attribute) and func.attrname in METADATA_METHODS):
                continue
            breaks = breaks or break_finder(ctx)
            if not (_enters_the_graph(ctx.values, entries, func.expr) or breaks.resumed_input(func.expr)):
                continue  # computed in the graph, and no break since made it the resumed frame's input
            message = (
                f"`{func.expr.as_string()}.{func.attrname}()` changes a tensor from outside the graph in place: "
                "Dynamo cannot, so the graph breaks"
            )
            yield ctx.report(call, message, traced, NO_FIX)
