"""GM402: a slice bound computed from a tensor's value (``x[:n]`` with ``n`` a tensor)."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.dynamo_settings import CAPTURE_SCALAR_OUTPUTS, setting_on
from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.host_values import numpy_origin, scalar_conversion
from graphmend_lint.analysis.values import ValueOracle, is_array_index
from graphmend_lint.analysis.walk import slices_in
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.static_slice_bound import static_bound_fix
from graphmend_lint.rules.base import Example, Rule, RuleOption
from graphmend_lint.rules.gb_types import gb_types

SLICE_FIX = Fix.advice(
    (
        "no source fix: slice to a static size and mask the rest (`torch.where(torch.arange(x.shape[0]) < n, ...)`), "
        "or set `torch._dynamo.config.capture_scalar_outputs = True` and bound the symbol with `torch._check` "
        "(the host sync stays, and the result has an unbacked size)"
    ),
)
_HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, m: torch.Tensor):\n"
_GATE = (
    "import torch\n\n\ndef gate(a, n):\n    return torch.tanh(a[:, :n])\n\n\n@torch.compile\n"
    "def f(x: torch.Tensor):\n    channels = torch.IntTensor([2])\n    return gate({arguments})\n"
)


def data_dependent_bound(values: ValueOracle, bound: nodes.NodeNG | None, converted: bool = True) -> str | None:
    """Why *bound* is a value Dynamo must copy to the host, or ``None`` when it is not.

    *converted*: also a Python number converted from a tensor (``n = t.item()``), whose copy breaks at
    the conversion, not at the slice (the statement holding the slice still has a break before it).
    """
    if bound is None:
        return None
    if values.is_tensor(bound):
        return "a tensor"
    origin = numpy_origin(values, bound)
    if origin is not None:
        return f"a NumPy value made from a tensor (line {origin.lineno})"
    if not converted:
        return None
    conversion = scalar_conversion(values, bound)
    if conversion is not None:
        return f"{conversion.label} of a tensor"
    if isinstance(bound, nodes.Name):
        assigned = bound_values(bound) or []
        conversions = [scalar_conversion(values, value) for value in assigned]
        if conversions and None not in conversions:
            return f"{conversions[0].label} of a tensor (line {assigned[0].lineno})"
    return None


class TensorValuedSliceBound(Rule):
    """## What it does
    Flags a slice of a tensor (or of an untyped value indexed on several axes,
    `retrieve_indices[best, :n]`, which only an array takes) whose start, stop
    or step is a tensor or a NumPy value made from one; a slice of anything
    else whose bound is a tensor too: a list, tuple or string asks the
    tensor's `__index__` (iBOT's multi-crop `torch.cat(x[start_idx:end_idx])`
    over `torch.cumsum(...)` ends: GB0124, measured) (`n = t.numpy()[0]`, or each `n` of `for n in
    t.cpu().numpy()`: Dynamo traces it as a 0-d tensor, GB0033, measured):
    `x[:n]` where `n = mask.sum()`. A bound converted first (`n =
    int(mask.sum())`, `.item()`) is GM301's finding: Dynamo breaks at the
    conversion and the slice then takes a Python int (measured: no break at
    the slice, as in MoCo's `self.queue[:, ptr : ptr + b]` after `ptr =
    int(self.queue_ptr)`).

    ## Why is this bad
    The slice's size is then the tensor's value. Dynamo has to copy it to the
    host (GB0124 at the slice) and the result's shape depends on
    data, so even with `capture_scalar_outputs` everything downstream sees an
    unbacked size.

    ## Example
    ```python
    @torch.compile
    def f(x, m):
        n = m.sum()
        return x[:n]
    ```

    ## Use instead
    Keep the shape static and mask instead:
    ```python
    @torch.compile
    def f(x, m):
        keep = torch.arange(x.shape[0]) < m.sum()
        return torch.where(keep, x, 0)
    ```
    (the result keeps `x`'s length: callers must accept the padding).

    ## Fix safety
    A bound that is an element of a tensor built from Python integers
    (`n = torch.IntTensor([self.hidden_size])`, then `x[:, :n[0]]`, or `n[0]`
    passed to a function that only slices with it, as VITS does) gets a
    **safe** fix: the integer itself is passed instead (`self.hidden_size`).
    Slicing by a 0-d integer tensor and by the integer it holds selects the
    same elements; the fix is offered only when the tensor is read nowhere
    but as constant-index elements, the integer is a literal or a `self`
    attribute the function never assigns, and the parameter (when the bound
    is one) is used for nothing but slice bounds, at every traced call.

    Every other bound is display-only: masking changes the output shape, which only the caller
    can accept. `torch._dynamo.config.capture_scalar_outputs = True` with
    `torch._check(0 <= n <= x.shape[0])` traces the slice with an unbacked
    size; the host sync stays. It is not offered as a fix: with slices whose
    bounds are computed from captured numbers Dynamo 2.13 can fail the whole
    compile (`PendingUnbackedSymbolNotFound`, measured in torchvision's
    `RandomCrop` and timm's VOLO `rand_bbox`).
    """

    code = "GM402"
    name = "tensor-valued-slice-bound"
    summary = "a slice bound taken from a tensor value splits the graph"
    dynamo_gb = gb_types("GB0124")
    options = {
        "capture-scalar-outputs": RuleOption(
            False,
            "the program turns `capture_scalar_outputs` on somewhere the linter cannot see: Dynamo then traces "
            "the bound as an unbacked symbol, slicing with it does not break (measured, torch 2.13) and the rule is silent",
        )
    }
    valid = (
        _HEADER + "    n = x.shape[0] // 2\n    return x[:n], x[: len(m)], x[1:-1:2]\n",
        _HEADER + "    return x[m.argsort()], x[:, : x.size(1) - 1]\n",
        "import torch\n\n\ndef f(x, m):\n    return x[: m.sum()]\n",
        # the conversion breaks (GM301 reports it, measured: GB0124 there); the slice takes a Python int
        _HEADER + "    n = int(m.sum())\n    return x[:, n:], x[: m.sum().item() : 2]\n",
        _HEADER.replace("import torch\n", "import torch\n\ntorch._dynamo.config.capture_scalar_outputs = True\n")
        + "    return x[: m.sum()]\n",
    )
    invalid = (
        Example(_HEADER + "    n = m.sum()\n    return x[:n]\n"),
        # iBOT's multi-crop groups: a Python list sliced by a tensor asks its ``__index__`` (GB0124, measured)
        Example(_HEADER + "    parts = list(x.unbind(0))\n    return torch.cat(parts[: m.sum()])\n"),
        # UDOP's prefix rows: each item of a NumPy array made from a tensor is a 0-d tensor to Dynamo
        Example(_HEADER + "    for i, n in enumerate(m.cpu().numpy()):\n        x[i, :n] = 0\n    return x\n"),
        # a legacy typed constructor builds a tensor, and its element is a 0-d tensor: the integer is passed
        Example(
            _GATE.format(arguments="x, channels[0]"),
            fixed=_GATE.format(arguments="x, 2"),
        ),
        Example(
            _HEADER + "    n = torch.IntTensor([3, 4])\n    return x[:, : n[1]]\n",
            fixed=_HEADER + "    n = torch.IntTensor([3, 4])\n    return x[:, : 4]\n",
        ),
        # the parameter is also used as a number: a tensor there is not the same as the integer
        Example(_GATE.format(arguments="x, channels[0]").replace("a[:, :n])", "a[:, :n]) * n")),
        # the tensor is changed in place before the call
        Example(_GATE.format(arguments="x, channels[0]").replace("    return gate(", "    channels[0] = 1\n    return gate(")),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        if setting_on(ctx.values, ctx.options, CAPTURE_SCALAR_OUTPUTS):
            return
        for subscript, traced in ctx.traced_nodes(nodes.Subscript):
            # only an array takes ``x[i, :n]`` (Medusa's untyped ``retrieve_indices``); a tensor bound breaks in
            # any slice: a list, tuple or string asks the tensor's ``__index__`` (iBOT's ``x[start_idx:end_idx]``)
            array = ctx.values.is_tensor(subscript.value) or is_array_index(subscript.slice)
            for part in slices_in(subscript.slice):
                for bound in (part.lower, part.upper, part.step):
                    why = data_dependent_bound(ctx.values, bound, converted=False)
                    if why is not None and (array or ctx.values.is_tensor(bound)):
                        message = (
                            f"slice bound `{snippet(bound)}` is {why}: data-dependent shape, graph break"
                        )
                        yield ctx.report(bound, message, traced, static_bound_fix(ctx.analysis, bound) or SLICE_FIX)
