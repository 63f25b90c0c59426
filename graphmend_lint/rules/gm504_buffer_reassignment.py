"""GM504: re-registering an ``nn.Buffer`` attribute inside ``forward``."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.values import ValueOracle, assigned_self_values, enclosing_class
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.local_rebinding import local_rebinding_fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

BUFFER_CONSTRUCTORS = frozenset({"torch.nn.Buffer", "torch.nn.parameter.Buffer"})
#: Conversions that may hand back the very tensor they were called on (and with it its buffer marker).
SELF_RETURNING_CONVERSIONS = frozenset(
    {"to", "type", "float", "half", "double", "bfloat16", "cuda", "cpu", "contiguous", "type_as"}
)
NO_FIX = Fix.advice(
    "no automatic fix: keep the converted tensor in a local variable instead of assigning it to the module",
)
_MODULE = (
    "import torch\nfrom torch import nn\n\n\nclass Embed(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.pos = {buffer}\n\n    def forward(self, x: torch.Tensor):\n"
    "        {statement}\n        return x + self.pos[: x.shape[0]]\n\n\nmodel = torch.compile(Embed())\n"
)


def created_as_buffer(values: ValueOracle, target: nodes.AssignAttr) -> bool:
    """``self.<attr>`` is created with ``nn.Buffer(...)`` somewhere in its class."""
    klass = enclosing_class(target)
    if klass is None:
        return False
    return any(
        isinstance(value, nodes.Call) and values.qualified_name(value.func) in BUFFER_CONSTRUCTORS
        for value in assigned_self_values(klass, target.attrname)
    )


def converts_itself(value: nodes.NodeNG, attribute: str) -> bool:
    """``self.<attribute>.to(...)`` / ``.float()`` ...: a conversion of the buffer itself."""
    if not (isinstance(value, nodes.Call) and isinstance(value.func, nodes.Attribute)):
        return False
    receiver = value.func.expr
    return (
        value.func.attrname in SELF_RETURNING_CONVERSIONS
        and isinstance(receiver, nodes.Attribute)
        and receiver.attrname == attribute
        and isinstance(receiver.expr, nodes.Name)
        and receiver.expr.name == "self"
    )


class BufferReassignment(Rule):
    """## What it does
    Flags `self.<name> = self.<name>.to(...)` (or `.float()`, `.half()`,
    `.cuda()`, ... of the same attribute) in code that `torch.compile` traces,
    when the class creates `self.<name>` with `nn.Buffer(...)`. transformers'
    CTRL does this with its positional encoding on every forward.

    ## Why is this bad
    Assigning to a buffer attribute goes through `nn.Module.__setattr__`,
    which re-registers the buffer. When the tensor still carries the
    `nn.Buffer` marker (a conversion that changed nothing returns the same
    tensor), `__setattr__` reads the marker's `persistent` flag, which Dynamo
    cannot resolve on a traced tensor: it breaks (GB4841, "Unsupported
    python_type() call", logged inside `torch/nn/modules/module.py` and
    attributed to the assignment). Inside a `try` block (transformers'
    output-capturing wrapper) Dynamo then runs the whole forward eagerly.
    Assigning a newly computed tensor, or a buffer registered with
    `register_buffer`, does not break (measured, torch 2.13).

    ## Example
    ```python
    class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.pos = nn.Buffer(torch.randn(16, 8), persistent=False)

        def forward(self, x):
            self.pos = self.pos.to(x.dtype)
            return x + self.pos[: x.shape[0]]
    ```

    ## Use instead
    ```python
        def forward(self, x):
            pos = self.pos.to(x.dtype)
            return x + pos[: x.shape[0]]
    ```

    ## Fix safety
    The fix binds a local named like the attribute and makes the later
    reads of `self.<name>` in the same function read it. It is offered when
    the assignment is a top-level statement of the function, the function
    writes `self.<name>` nowhere else and does not use the local name
    already. It is **unsafe**: the outputs are the same, but the module keeps
    the buffer it had, so `state_dict()`, other methods and later calls see
    the original dtype and device, and the conversion runs on every call.
    """

    code = "GM504"
    name = "buffer-reassignment-in-forward"
    summary = "re-assigning an `nn.Buffer` attribute in compiled code splits the graph"
    dynamo_gb = gb_types("GB4841")
    valid = (
        _MODULE.format(buffer="torch.randn(4, 4)", statement="self.pos = self.pos.to(x.dtype)"),
        _MODULE.format(buffer="nn.Buffer(torch.randn(4, 4))", statement="self.pos = x.detach()[:1] + self.pos"),
        _MODULE.format(buffer="nn.Buffer(torch.randn(4, 4))", statement="pos = self.pos.to(x.dtype)"),
    )
    invalid = (
        Example(
            _MODULE.format(buffer="nn.Buffer(torch.randn(4, 4))", statement="self.pos = self.pos.to(x.dtype)"),
            fixed=_MODULE.format(buffer="nn.Buffer(torch.randn(4, 4))", statement="pos = self.pos.to(x.dtype)").replace(
                "x + self.pos[", "x + pos["
            ),
            unsafe=True,
        ),
        Example(
            _MODULE.format(
                buffer="nn.Buffer(torch.randn(4, 4), persistent=False)",
                statement="if x.is_cuda:\n            self.pos = self.pos.cuda()",
            )
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for statement, traced in ctx.traced_nodes(nodes.Assign):
            if len(statement.targets) != 1 or not isinstance(statement.targets[0], nodes.AssignAttr):
                continue
            target = statement.targets[0]
            if not (isinstance(target.expr, nodes.Name) and target.expr.name == "self"):
                continue
            if not converts_itself(statement.value, target.attrname) or not created_as_buffer(ctx.values, target):
                continue
            message = (
                f"re-assigning the `nn.Buffer` `self.{target.attrname}` in compiled code causes a graph break"
            )
            fix = local_rebinding_fix(ctx.analysis, statement, target) or NO_FIX
            yield ctx.report(statement, message, traced, fix)
