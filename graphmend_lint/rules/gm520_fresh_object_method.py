"""GM520: a method that breaks the graph, called on an object the compiled frame built itself."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.fresh_objects import fresh_instance_class, method_of
from graphmend_lint.analysis.lookup import runs_before
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.break_sites import Verdict, break_finder
from graphmend_lint.rules.gb_types import gb_types

NO_FIX = Fix.advice(
    "no automatic fix: build the object outside the compiled function and pass it in, call the method from a "
    "helper that receives the object, or remove the break inside the method"
)
_CLASS = (
    "import torch\n\n\nclass Node:\n    def __init__(self, prior):\n        self.prior = prior\n\n"
    "    def expand(self, logits: torch.Tensor):\n        {body}\n        return logits * self.prior\n\n\n"
)


class FreshObjectMethod(Rule):
    """## What it does
    Flags a call, in code that `torch.compile` traces, of a method that
    breaks the graph (a print, `.item()`, a branch on a tensor... in the
    method or in what it calls in the same file) on an object the same
    function built: `Node(0.0).expand(x)`, or `root.expand(x)` after
    `root = Node(0.0)` or `root = make_node()`. Search trees, samplers and
    small helper objects of training loops are built this way (MuZero's
    `MCTS(config).run(...)`).

    ## Why is this bad
    An object built inside the traced frame has no source Dynamo could
    rebuild it from. When the method breaks, Dynamo must rebuild the bound
    method on the resumed side and cannot: it logs a second break at the call
    ("Reconstruction failure", GB0092), besides the one inside the method
    (measured, torch 2.13, for plain classes, dataclasses and `NamedTuple`
    classes). The break inside the method is reported by its own rule; this
    one is the call's. Dynamo then runs the rest of the frame eagerly, so a
    later call on every path after it is not reported.

    Not flagged: an object a graph break comes between (on every path) the
    construction and the call (the resumed frame receives it as an input,
    which has a source; measured), the same object handed to a helper that calls the method
    (the helper then runs as a frame of its own, where the object is an
    argument with a source), objects kept on `self` or passed in, and
    classes with bases outside the file (an `nn.Module` built in traced code
    is GM506).

    ## Example
    ```python
    @torch.compile
    def search(x):
        root = Node(0.0)
        return root.expand(x)  # expand() calls .item()
    ```

    ## Use instead
    Build the object outside and pass it in, or remove the break in the method:
    ```python
    @torch.compile
    def search(x, root):
        return root.expand(x)
    ```

    ## Fix safety
    No automatic fix: moving the construction out changes when the object is
    built and who owns it. The diagnostic carries a display-only hint.
    """

    code = "GM520"
    name = "fresh-object-method"
    summary = "a breaking method called on an object built in compiled code adds a reconstruction break"
    dynamo_gb = gb_types("GB0092")
    valid = (
        # a break between construction and call: the resumed frame receives the object
        _CLASS.format(body="print('expand')")
        + "@torch.compile\ndef f(x: torch.Tensor):\n    root = Node(0.5)\n    print('built')\n    return root.expand(x)\n",
        # the method does not break
        _CLASS.format(body="logits = logits + 1")
        + "@torch.compile\ndef f(x: torch.Tensor):\n    return Node(0.5).expand(x)\n",
        # the object comes in as an argument: it has a source
        _CLASS.format(body="print('expand')")
        + "@torch.compile\ndef f(x: torch.Tensor, root: Node):\n    return root.expand(x)\n",
        # a helper calls the method: it runs as its own frame, where the object is an argument
        _CLASS.format(body="print('expand')")
        + "def grow(node, x):\n    return node.expand(x)\n\n\n"
        "@torch.compile\ndef f(x: torch.Tensor):\n    return grow(Node(0.5), x)\n",
    )
    invalid = (
        Example(
            _CLASS.format(body="print('expand')")
            + "@torch.compile\ndef f(x: torch.Tensor):\n    root = Node(0.5)\n    return root.expand(x)\n"
        ),
        Example(
            _CLASS.format(body="logits = logits * logits.sum().item()")
            + "def make_node():\n    return Node(1.0)\n\n\n"
            "@torch.compile\ndef f(x: torch.Tensor):\n    return make_node().expand(x)\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        breaks = None
        reported: list[nodes.Call] = []
        for call, traced in ctx.traced_nodes(nodes.Call):
            if not isinstance(call.func, nodes.Attribute):
                continue
            klass = fresh_instance_class(call.func.expr)
            method = method_of(klass, call.func.attrname) if klass is not None else None
            if method is None:
                continue
            breaks = breaks or break_finder(ctx)
            if breaks.verdict(method) is not Verdict.BREAKS or breaks.resumed_input(call.func.expr):
                continue  # a clean method; or a break before the call made the object a resumed frame's input
            if any(earlier.frame() is call.frame() and runs_before(earlier, call) for earlier in reported):
                continue  # Dynamo ran the rest of the frame eagerly after the earlier one
            reported.append(call)
            message = (
                f"`{snippet(call.func)}(...)` breaks the graph on a `{klass.name}` built in compiled code: Dynamo "
                "cannot rebuild the object after the break and logs a second break here"
            )
            yield ctx.report(call, message, traced, NO_FIX)
