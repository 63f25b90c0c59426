"""Turn a Dynamo capture switch on for a module whose captured values only feed tensor work.

``torch._dynamo.config.capture_scalar_outputs`` traces ``.item()`` (and a
tensor passed as a size) as an unbacked symbol;
``capture_dynamic_output_shape_ops`` traces ``nonzero``, boolean-mask reads
and ``repeat_interleave`` with an unbacked output size. It is the fix Dynamo's
own GB0124 hint names. Written as one line after the module's imports
(:mod:`graphmend_lint.fixes.dynamo_setting`), it is unsafe: the switch is
process-wide, the host sync stays, and some backends fall back for the
captured op. It is offered only when nothing in the file needs a captured
value's concrete number (:mod:`graphmend_lint.analysis.capture_hazards`),
since there the break would only move.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.capture_hazards import Origin, capture_hazard
from graphmend_lint.analysis.captured_flow import tolist_escape
from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.dynamo_settings import (
    CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS,
    CAPTURE_SCALAR_OUTPUTS,
    settings_turned_on,
)
from graphmend_lint.analysis.host_values import method_call, scalar_conversion
from graphmend_lint.analysis.tensor_sizes import tensor_size
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Fix
from graphmend_lint.fixes.dynamo_setting import enable_setting_fix

_MESSAGES = {
    CAPTURE_SCALAR_OUTPUTS: "Trace tensor-to-number conversions symbolically (`capture_scalar_outputs = True`)",
    CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS: (
        "Trace data-dependent output sizes symbolically (`capture_dynamic_output_shape_ops = True`)"
    ),
}


def _host_copy(analysis: FileAnalysis, node: nodes.NodeNG, setting: str) -> bool:
    """``.tolist()``, ``.numpy()``, ``.item()``: under either switch their numbers are symbols Python may need.

    Not, for ``capture_scalar_outputs``, a ``.tolist()`` whose list only ever
    becomes split sizes, however many calls it crosses
    (:mod:`graphmend_lint.analysis.captured_flow`): nothing needs its numbers,
    so its return or hand-over is no hazard. Only while
    ``capture_dynamic_output_shape_ops`` is off: with it, the tensor may have
    a data-dependent length, and so would the list of sizes.
    """
    if method_call(node, "tolist", "numpy", "item") is None:
        return False
    list_of_sizes = (
        node.func.attrname == "tolist"
        and setting == CAPTURE_SCALAR_OUTPUTS
        and CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS not in settings_turned_on(analysis.values)
        and tolist_escape(analysis, node) is None
    )
    return not list_of_sizes


def _hazard(analysis: FileAnalysis, setting: str, is_captured: Origin) -> nodes.NodeNG | None:
    """The use that would still break with *setting* on (see :func:`capture_hazards.capture_hazard`).

    Host copies count as captured under both switches: a ``.tolist()`` of a
    masked tensor is a list of unknown length (cohere's ``groupby`` over it
    fails a data-dependent guard), whichever of the two produced it.
    """

    def captured(node: nodes.NodeNG) -> bool:
        return is_captured(node) or _host_copy(analysis, node, setting)

    return capture_hazard(analysis, setting, captured, numbers=setting == CAPTURE_SCALAR_OUTPUTS)


def capture_switch_fix(analysis: FileAnalysis, setting: str, is_captured: Origin) -> Fix | None:
    """The module-level switch *setting* as an unsafe fix, or ``None`` when a captured value would still break."""
    if _hazard(analysis, setting, is_captured) is not None:
        return None
    return enable_setting_fix(analysis, setting, _MESSAGES[setting])


def declined_switch_advice(analysis: FileAnalysis, setting: str, is_captured: Origin) -> Fix | None:
    """Why the switch is not offered: the use it would move the break to; ``None`` when nothing would break.

    An argument is shown with its call (``self.norm(h[mask_bool])``: the batch
    norm is what needs the size).
    """
    hazard = _hazard(analysis, setting, is_captured)
    if hazard is None:
        return None
    shown = hazard.parent if isinstance(hazard.parent, nodes.Call) else hazard
    return Fix.advice(
        f"no fix: `torch._dynamo.config.{setting} = True` would only move the break, to line {hazard.lineno} "
        f"(`{snippet(shown)}` needs the concrete data-dependent value)"
    )


def scalar_capture_fix(analysis: FileAnalysis) -> Fix | None:
    """``capture_scalar_outputs``, for ``.item()``, ``int(t)`` and a tensor used as a size."""

    def is_conversion(node: nodes.NodeNG) -> bool:
        return scalar_conversion(analysis.values, node) is not None

    if _tensor_slice_bound(analysis):
        return None  # the switch would trace it too, and such slices can fail the compile (GM402)
    if _filled_size_list(analysis):
        return None  # the switch makes Dynamo fail on the size list (:attr:`TensorSize.filled_list`)
    return capture_switch_fix(analysis, CAPTURE_SCALAR_OUTPUTS, is_conversion)


def _filled_size_list(analysis: FileAnalysis) -> bool:
    """Some traced call takes a size list the function filled in with a tensor (torch_scatter's
    ``size[dim] = dim_size``, then ``torch.zeros(size)``)."""

    def compute() -> bool:
        return any(
            (size := tensor_size(analysis.values, call)) is not None and size.filled_list
            for call, _ in analysis.traced_nodes(nodes.Call)
        )

    return analysis.shared("filled-size-list", compute)


def _tensor_slice_bound(analysis: FileAnalysis) -> bool:
    """Some slice in traced code has a tensor bound (``x[:, :n]`` with ``n`` a 0-d tensor)."""

    def compute() -> bool:
        return any(
            bound is not None and analysis.values.is_tensor(bound)
            for bounds, _ in analysis.traced_nodes(nodes.Slice)
            for bound in (bounds.lower, bounds.upper, bounds.step)
        )

    return analysis.shared("tensor-slice-bound", compute)
