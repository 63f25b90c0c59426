"""GM522: assigning a complex tensor's ``.real`` / ``.imag`` in code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

#: The tensor attributes whose assignment Dynamo refuses ("Failed to set tensor attribute", measured).
_PARTS = frozenset({"real", "imag"})
IN_PLACE_COPY = Fix.advice(
    "no automatic fix: write the part in place with `z.imag.zero_()` / `z.real.copy_(v)` (a view of the "
    "tensor, traced), or rebuild the tensor with `torch.complex(real, imag)`"
)
_HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n    z = torch.view_as_complex(torch.stack([x, x], -1))\n"


class TensorPartAssignment(Rule):
    """## What it does
    Flags an assignment to the `real` or `imag` attribute of a tensor
    (`z.imag = 0.0`, `x[..., 0].imag = 0.0`, `z.real = r`) in code that
    `torch.compile` traces. Spectral code does it to clear the imaginary
    part of the DC and Nyquist bins before an inverse FFT
    (torch-harmonics' `InverseRealSHT`).

    ## Why is this bad
    Dynamo cannot set a tensor attribute: it ends the graph at the
    assignment ("Failed to set tensor attribute", GB0058; measured, torch
    2.13, for `.real` and `.imag` of a tensor computed in the frame).

    ## Example
    ```python
    x = torch.view_as_complex(xs)
    x[..., 0].imag = 0.0
    ```

    ## Use instead
    ```python
    x = torch.view_as_complex(xs)
    x[..., 0].imag.zero_()
    ```
    `z.imag` is a view of `z`, and the in-place write on it is traced.

    ## Fix safety
    No automatic fix: the in-place form needs a value that broadcasts like
    the assigned one (a Python number becomes `zero_()` or `fill_()`, a
    tensor `copy_()`), which the diagnostic's hint names.
    """

    code = "GM522"
    name = "tensor-part-assignment"
    summary = "assigning `.real` / `.imag` of a tensor in compiled code splits the graph"
    dynamo_gb = gb_types("GB0058")
    valid = (
        # the in-place writes on the views trace
        _HEADER + "    z[..., 0].imag.zero_()\n    z.real.copy_(x)\n    return z\n",
        # reading the parts traces
        _HEADER + "    return z.real + z.imag\n",
        # an object of this file with a `real` field is no tensor
        "import torch\n\n\nclass Part:\n    def __init__(self):\n        self.real = 0\n\n\n@torch.compile\n"
        "def f(x: torch.Tensor):\n    p = Part()\n    p.real = 1\n    return x * p.real\n",
    )
    invalid = (
        Example(_HEADER + "    z[..., 0].imag = 0.0\n    return z\n", advice=True),
        Example(_HEADER + "    z.real = torch.zeros_like(x)\n    return z\n", advice=True),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for target, traced in ctx.traced_nodes(nodes.AssignAttr):
            if target.attrname not in _PARTS or not ctx.values.is_tensor(target.expr):
                continue
            message = (
                f"`{snippet(target.expr)}.{target.attrname} = ...` sets a tensor attribute in compiled code: "
                "Dynamo cannot, so the graph breaks"
            )
            yield ctx.report(target.statement(), message, traced, IN_PLACE_COPY)
