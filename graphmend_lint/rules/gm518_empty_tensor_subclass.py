"""GM518: creating a ``torch.Tensor`` subclass without data, through its own ``__new__``, in traced code."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.gates import gate_note
from graphmend_lint.analysis.tensor_subclass_new import empty_subclass_new
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix, Position
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

NO_FIX = Fix.advice(
    "no automatic fix: create the placeholder outside the compiled function and pass it in, or build the "
    "instance from a tensor (`super().__new__(cls, data)`)"
)
_SUB = (
    "import torch\n\n\nclass Spike(torch.Tensor):\n    def __new__(cls, *args, init_flag=False, **kwargs):\n"
    "        return super().__new__(cls, *args, **kwargs)\n\n    def __init__(self, *args, init_flag=True):\n"
    "        self.init_flag = init_flag\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n{body}"
)


class EmptyTensorSubclass(Rule):
    """## What it does
    Flags the creation, in code that `torch.compile` traces, of an instance
    of a module-level `torch.Tensor` subclass of the same file without
    positional arguments, when the subclass's own `__new__` hands its (then
    empty) positional arguments to `super().__new__(cls, *args)` or
    `torch.Tensor.__new__(cls, *args)`: a state placeholder such as
    snntorch's `_SpikeTensor(init_flag=False)`. The finding sits on that
    line of `__new__`, where Dynamo logs the break.

    ## Why is this bad
    Dynamo inlines `Tensor.__new__` and cannot bind a call of it that
    carries no data ("failed to bind arguments when attempting to inline",
    GB7312; measured, torch 2.13). A creation with positional arguments is
    not flagged: `Spike(y)` reaching `super().__new__(cls, data)` traces
    (measured, for a subclass without `__init__`; with an `__init__` or
    keyword arguments it can still break at the call, which this rule does
    not claim).

    ## Example
    ```python
    class Spike(torch.Tensor):
        def __new__(cls, *args, init_flag=False, **kwargs):
            return super().__new__(cls, *args, **kwargs)

    @torch.compile
    def step(x):
        mem = Spike(init_flag=False)
        ...
    ```

    ## Use instead
    Create the placeholder outside the compiled function and pass it in, or
    build it from a tensor (`super().__new__(cls, data)` with `data` given).

    ## Fix safety
    No automatic fix: which data the placeholder should carry is a design
    decision. The diagnostic carries a display-only hint.
    """

    code = "GM518"
    name = "empty-tensor-subclass"
    summary = "creating a tensor subclass without data through its `__new__` in compiled code splits the graph"
    dynamo_gb = gb_types("GB7312")
    valid = (
        # given a tensor, `super().__new__(cls, data)` traces (measured)
        "import torch\n\n\nclass Spike(torch.Tensor):\n    def __new__(cls, data, init_flag=False):\n"
        "        return super().__new__(cls, data)\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
        "    return Spike(x * 2)\n",
        # not compiled
        _SUB.replace("@torch.compile\n", "").format(body="    return Spike(init_flag=False)\n"),
    )
    invalid = (Example(_SUB.format(body="    mem = Spike(init_flag=False)\n    return x * 2, mem\n")),)

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        reported: set[int] = set()
        source = ctx.analysis.source
        for call, traced in ctx.traced_nodes(nodes.Call):
            inner = empty_subclass_new(ctx.analysis, call)
            if inner is None or id(inner) in reported:
                continue  # one finding per `__new__`, however many traced calls reach it
            reported.add(id(inner))
            message = (
                f"`{call.func.as_string()}(...)` in compiled code creates a tensor subclass without data: Dynamo "
                "cannot bind the `Tensor.__new__` call here, so the graph breaks"
            )
            end_line = inner.end_lineno or inner.lineno
            yield Diagnostic(
                code=self.code,
                message=message + gate_note(ctx.values, call),
                path=ctx.analysis.path,
                start=Position(inner.lineno, source.char_column(inner.lineno, inner.col_offset)),
                end=Position(end_line, source.char_column(end_line, inner.end_col_offset or 0)),
                fix=NO_FIX,
                scope_chain=traced.chain,
            )
