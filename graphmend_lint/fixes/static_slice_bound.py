"""GM402's fix for a slice bound that is an element of a tensor built from Python integers.

VITS packs its channel count into a tensor and slices with an element of it::

    num_channels_tensor = torch.IntTensor([self.hidden_size])
    acts = fused_add_tanh_sigmoid_multiply(hidden_states, global_states, num_channels_tensor[0])
    ...
    def fused_add_tanh_sigmoid_multiply(input_a, input_b, num_channels):
        t_act = torch.tanh(in_act[:, :num_channels, :])        # GB0124: the element is a 0-d tensor

Dynamo does not fold the legacy constructor's value, so the bound is copied to
the host (measured, torch 2.13). The element is known from the source: the
fix passes the Python integer it was built from (``self.hidden_size``), at the
bound itself or at every traced call of the function whose parameter is the
bound. Slicing by a 0-d integer tensor and by the integer it holds selects the
same elements, so the fix is **safe** when the parameter is used for nothing
but slice bounds and the integer cannot change between the tensor's
construction and the call.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.dead_branches import passed_argument
from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.host_values import reads_of
from graphmend_lint.analysis.values import ValueOracle
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.host_sync import node_text

#: Constructors that copy a list of Python numbers into a new tensor.
_CONSTRUCTORS = frozenset({"torch.tensor", "torch.IntTensor", "torch.LongTensor"})


def static_bound_fix(analysis: FileAnalysis, bound: nodes.NodeNG) -> Fix | None:
    """Pass the integer behind *bound* instead of the tensor element, or ``None`` when it is not provable."""
    values = analysis.values
    known = _known_integer(values, bound)
    if known is not None:
        edits = [_replaced(analysis, bound, known)]
    else:
        arguments = _arguments_for_parameter(analysis, bound)
        if not arguments:
            return None
        integers = [_known_integer(values, argument) for argument in arguments]
        if any(integer is None for integer in integers):
            return None
        edits = [_replaced(analysis, a, i) for a, i in zip(arguments, integers) if i is not None]
    return Fix(
        edits=tuple(edits),
        applicability=Applicability.SAFE,
        message="Slice by the Python integer the tensor was built from: the same elements, no host copy",
    )


def _replaced(analysis: FileAnalysis, node: nodes.NodeNG, integer: nodes.NodeNG) -> Edit:
    return Edit(analysis.start_of(node), analysis.end_of(node), node_text(analysis, integer))


def _known_integer(values: ValueOracle, element: nodes.NodeNG) -> nodes.NodeNG | None:
    """The integer expression ``t[k]`` holds when ``t = torch.IntTensor([..., expr, ...])`` is its only binding,
    every read of ``t`` is a constant-index element, and *expr* cannot change in the function."""
    if not (isinstance(element, nodes.Subscript) and isinstance(element.value, nodes.Name)):
        return None
    index = element.slice
    if not (isinstance(index, nodes.Const) and type(index.value) is int and index.value >= 0):
        return None
    built = bound_values(element.value)
    if built is None or len(built) != 1 or not isinstance(built[0], nodes.Call):
        return None
    call = built[0]
    if values.qualified_name(call.func) not in _CONSTRUCTORS or len(call.args) != 1 or call.keywords:
        return None
    if call.frame() is not element.frame():
        return None  # built in another scope: its integers may not mean the same here
    listed = call.args[0]
    if not isinstance(listed, (nodes.List, nodes.Tuple)) or index.value >= len(listed.elts):
        return None
    target = call.parent.targets[0] if isinstance(call.parent, nodes.Assign) else None
    reads = reads_of(target) if isinstance(target, nodes.AssignName) else None
    if reads is None or not all(_constant_element(read) for read in reads):
        return None  # the tensor is passed on or changed in place somewhere: its element may not stay the integer
    integer = listed.elts[index.value]
    return integer if _fixed_integer(integer, element.frame()) else None


def _constant_element(read: nodes.Name) -> bool:
    """*read* is ``t[k]`` with a constant *k*, read (not assigned or deleted)."""
    parent = read.parent
    return (
        isinstance(parent, nodes.Subscript) and parent.value is read and isinstance(parent.slice, nodes.Const)
        and not isinstance(parent.parent, (nodes.Assign, nodes.AugAssign, nodes.Delete))
    )  # fmt: skip


def _fixed_integer(node: nodes.NodeNG, function: nodes.NodeNG) -> bool:
    """An ``int`` literal, or ``self.<attr>`` that *function* never assigns."""
    if isinstance(node, nodes.Const):
        return type(node.value) is int
    if not (isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self"):
        return False
    assigned = (
        target for target in function.nodes_of_class(nodes.AssignAttr)
        if target.attrname == node.attrname and isinstance(target.expr, nodes.Name) and target.expr.name == "self"
    )  # fmt: skip
    return next(assigned, None) is None


def _arguments_for_parameter(analysis: FileAnalysis, bound: nodes.NodeNG) -> list[nodes.NodeNG]:
    """What every traced call of the function passes for the parameter *bound* names, when the parameter is
    used only as slice bounds; empty when that is not certain."""
    if not isinstance(bound, nodes.Name):
        return []
    function = bound.frame()
    parameter = _parameter_named(function, bound.name)
    if parameter is None or not _only_slice_bounds(function, bound.name):
        return []
    values = analysis.values
    calls = [call for call, _ in analysis.traced_nodes(nodes.Call) if values.called_function(call) is function]
    arguments = [passed_argument(call, function, parameter.name) for call in calls]
    return [] if not arguments or None in arguments else arguments  # type: ignore[return-value]


def _parameter_named(function: nodes.NodeNG, name: str) -> nodes.AssignName | None:
    """The plain positional-or-keyword parameter *name* of a module-level function that never rebinds it."""
    if not isinstance(function, nodes.FunctionDef) or isinstance(function.parent, nodes.ClassDef):
        return None
    arguments = function.args
    if arguments.vararg or arguments.kwarg or arguments.posonlyargs or arguments.kwonlyargs:
        return None
    parameter = next((p for p in arguments.args or [] if p.name == name), None)
    rebound = any(target.name == name for target in function.nodes_of_class(nodes.AssignName) if target is not parameter)
    return None if rebound else parameter


def _only_slice_bounds(function: nodes.FunctionDef, name: str) -> bool:
    """Every read of *name* in *function* is a start, stop or step of a slice."""
    reads = [n for n in function.nodes_of_class(nodes.Name) if n.name == name]
    return bool(reads) and all(isinstance(read.parent, nodes.Slice) for read in reads)
