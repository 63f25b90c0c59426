"""NumPy plans: host helpers whose array traced code turns into a tensor at once.

The wav2vec2 family's SpecAugment (``_compute_mask_indices``) is the model:
a module-level function draws from NumPy's global RNG and fills an array made
with ``np.zeros(shape)``; the traced caller converts it with
``torch.tensor(mask, device=..., dtype=torch.bool)`` on the next line. Each
draw breaks the graph (GB0033), and the compiled model does not even
reproduce eager's draws (measured: seeded alike, its outputs differ).

Run as a ``torch.library.custom_op``, the helper is one opaque graph op: the
draws happen at run time, in eager's order, and Dynamo only needs the output's
shape, which a fake function computes from the arguments. That needs three
things this module checks statically:

* every parameter has an annotation the op schema can state (``int``,
  ``float``, ``bool``, ``str``, a tuple or list of ints, a tensor, each
  possibly optional) and a constant default, if any;
* every ``return`` returns the one array made by ``np.zeros`` / ``ones`` /
  ``empty`` / ``full`` whose shape reads only parameters, directly or through
  plain assignments from them (``batch_size, sequence_length = shape``), and
  which is never rebound or resized: so the output's shape is known without
  running the plan;
* every call in traced code is ``name = helper(...)`` followed by
  ``name = torch.tensor(name, dtype=..., device=...)``, which the op replaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from astroid import nodes

if TYPE_CHECKING:
    from graphmend_lint.context import FileAnalysis

_ARRAY_FACTORIES = frozenset({"numpy.zeros", "numpy.ones", "numpy.empty", "numpy.full"})
_CONVERSIONS = frozenset({"torch.tensor", "torch.as_tensor"})
_CONVERSION_KEYWORDS = frozenset({"device", "dtype"})


@dataclass(frozen=True)
class PlanParameter:
    """One parameter of the helper, as the op declares it."""

    name: str
    #: The op schema's type, with ``{torch}`` for the module's torch name: ``list[int]``, ``{torch}.Tensor | None``.
    op_type: str
    default: str | None
    #: The helper expects a tuple where the op receives a list: the op passes ``tuple(name)``.
    as_tuple: bool


@dataclass(frozen=True)
class PlanCall:
    """``name = helper(...)`` in traced code and the conversion on the next line."""

    call: nodes.Call
    conversion: nodes.Assign
    device: nodes.NodeNG | None
    dtype: nodes.NodeNG


@dataclass(frozen=True)
class HostPlan:
    """A helper that can run as one opaque op, and the traced calls to rewrite."""

    helper: nodes.FunctionDef
    parameters: tuple[PlanParameter, ...]
    #: Statements of the helper the fake function repeats to compute the shape.
    shape_prelude: tuple[nodes.Assign, ...]
    shape: nodes.NodeNG
    calls: tuple[PlanCall, ...]
    #: The helper spells optional annotations ``Optional[...]`` (else ``... | None``).
    spells_optional: bool


def module_helper(node: nodes.NodeNG) -> nodes.FunctionDef | None:
    """The module-level function *node* runs in (through nested functions), if any."""
    frame = node.frame()
    while isinstance(frame, (nodes.FunctionDef, nodes.Lambda)) and not isinstance(frame.parent, nodes.Module):
        frame = frame.parent.frame()
    return frame if isinstance(frame, nodes.FunctionDef) else None


def host_plan(analysis: FileAnalysis, helper: nodes.FunctionDef) -> HostPlan | None:
    """*helper* as a host plan the op rewrite covers, or ``None`` (computed once per helper and file)."""
    return analysis.shared(f"host-plan:{helper.name}:{helper.lineno}", lambda: _host_plan(analysis, helper))


def _host_plan(analysis: FileAnalysis, helper: nodes.FunctionDef) -> HostPlan | None:
    if helper.decorators is not None or helper.is_generator() or isinstance(helper, nodes.AsyncFunctionDef):
        return None
    parameters = _parameters(helper)
    made = _returned_array(analysis, helper)
    calls = _traced_calls(analysis, helper)
    if parameters is None or made is None or not calls:
        return None
    array, shape = made
    prelude = _shape_prelude(helper, shape, array, {p.name for p in parameters})
    if prelude is None:
        return None
    annotations = [argument.as_string() for argument in helper.args.annotations if argument is not None]
    spells_optional = any(text.startswith("Optional[") for text in annotations)
    return HostPlan(helper, parameters, prelude, shape, calls, spells_optional)


def _parameters(helper: nodes.FunctionDef) -> tuple[PlanParameter, ...] | None:
    """The helper's parameters with op types, or ``None`` when one cannot be stated in an op schema."""
    arguments = helper.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.posonlyargs:
        return None
    defaults = [None] * (len(arguments.args) - len(arguments.defaults)) + list(arguments.defaults)
    found = []
    for argument, annotation, default in zip(arguments.args, arguments.annotations, defaults):
        if annotation is None or (default is not None and not isinstance(default, nodes.Const)):
            return None
        op_type = _op_type(annotation.as_string())
        if op_type is None:
            return None
        text, as_tuple = op_type
        found.append(PlanParameter(argument.name, text, None if default is None else default.as_string(), as_tuple))
    return tuple(found)


#: Annotations an op schema can state.
_SCALAR = re.compile(r"^(int|float|bool|str)$")
_INT_SEQUENCE = re.compile(r"^(?P<kind>tuple|Tuple|list|List|Sequence)\[int(, ?int)*(, ?\.\.\.)?\]$")
_TENSOR = re.compile(r"^(?P<torch>\w+)\.\w*Tensor$")
_OPTIONAL = re.compile(r"^(?:Optional\[(?P<inner>.+)\]|(?P<left>.+?) ?\| ?None|None ?\| ?(?P<right>.+))$")


def _op_type(annotation: str) -> tuple[str, bool] | None:
    """The op schema's spelling of an annotation (``{torch}`` for the torch name), and whether it is a tuple."""
    optional = _OPTIONAL.match(annotation)
    if optional is not None:
        inner = _op_type(optional.group("inner") or optional.group("left") or optional.group("right"))
        return None if inner is None or inner[1] else (f"{inner[0]} | None", False)
    if _SCALAR.match(annotation):
        return annotation, False
    sequence = _INT_SEQUENCE.match(annotation)
    if sequence is not None:
        return "list[int]", sequence.group("kind") in ("tuple", "Tuple")
    if _TENSOR.match(annotation):
        return "{torch}.Tensor", False
    return None


def _returned_array(analysis: FileAnalysis, helper: nodes.FunctionDef) -> tuple[str, nodes.NodeNG] | None:
    """The one array every ``return`` returns, and the shape it was made with."""
    returns = [node for node in helper.nodes_of_class(nodes.Return) if node.frame() is helper]
    names = {node.value.name if isinstance(node.value, nodes.Name) else None for node in returns}
    if len(names) != 1 or None in names:
        return None
    (array,) = names
    assignment = _single_assignment(helper, array)
    if assignment is None or not isinstance(assignment.value, nodes.Call) or _resized(helper, array):
        return None
    factory = assignment.value
    if analysis.values.qualified_name(factory.func) not in _ARRAY_FACTORIES:
        return None
    shape = factory.args[0] if factory.args else next((k.value for k in factory.keywords or () if k.arg == "shape"), None)
    return None if shape is None else (array, shape)


def _resized(helper: nodes.FunctionDef, array: str) -> bool:
    """``array.resize(...)``: the one in-place change of an array's shape."""
    return any(
        isinstance(call.func, nodes.Attribute) and call.func.attrname == "resize"
        and isinstance(call.func.expr, nodes.Name) and call.func.expr.name == array
        for call in helper.nodes_of_class(nodes.Call)
    )


def _single_assignment(helper: nodes.FunctionDef, name: str) -> nodes.Assign | None:
    """The helper's only binding of *name*, when it is a plain statement of the helper's own body."""
    bindings = helper.locals.get(name, [])
    if len(bindings) != 1 or not isinstance(bindings[0], nodes.AssignName):
        return None
    statement = bindings[0].statement()
    return statement if isinstance(statement, nodes.Assign) and statement.parent is helper else None


def _shape_prelude(
    helper: nodes.FunctionDef, shape: nodes.NodeNG, array: str, parameters: set[str]
) -> tuple[nodes.Assign, ...] | None:
    """The plain assignments the shape reads through, down to parameters, in source order."""
    needed: dict[int, nodes.Assign] = {}
    pending = [name.name for name in [shape, *shape.nodes_of_class(nodes.Name)] if isinstance(name, nodes.Name)]
    while pending:
        name = pending.pop()
        if name in parameters:
            continue
        statement = _single_assignment(helper, name)
        if statement is None or name == array or any(True for _ in statement.value.nodes_of_class(nodes.Call)):
            return None
        if statement.lineno not in needed:
            needed[statement.lineno] = statement
            pending.extend(n.name for n in statement.value.nodes_of_class(nodes.Name))
    return tuple(needed[line] for line in sorted(needed))


def _traced_calls(analysis: FileAnalysis, helper: nodes.FunctionDef) -> tuple[PlanCall, ...] | None:
    """Every call of *helper* in traced code in the rewritable form, or ``None`` when one is not."""
    calls = []
    for call, _ in analysis.traced_nodes(nodes.Call):
        if isinstance(call.func, nodes.Name) and call.func.name == helper.name and _resolves_to(call.func, helper):
            found = _plan_call(analysis, call)
            if found is None:
                return None
            calls.append(found)
    return tuple(calls) or None


def _resolves_to(name: nodes.Name, helper: nodes.FunctionDef) -> bool:
    try:
        _, bindings = name.lookup(name.name)
    except Exception:  # astroid lookups can fail on odd code: then nothing is known
        return False
    return list(bindings) == [helper]


def _plan_call(analysis: FileAnalysis, call: nodes.Call) -> PlanCall | None:
    """``name = helper(...)`` then ``name = torch.tensor(name, dtype=..., device=...)``."""
    statement = call.parent
    if not isinstance(statement, nodes.Assign) or statement.value is not call or len(statement.targets) != 1:
        return None
    target = statement.targets[0]
    if not isinstance(target, nodes.AssignName) or any(isinstance(a, nodes.Starred) for a in call.args):
        return None
    if any(keyword.arg is None for keyword in call.keywords or ()) or not (call.args or call.keywords):
        return None
    conversion = statement.next_sibling()
    if not isinstance(conversion, nodes.Assign) or not isinstance(conversion.value, nodes.Call):
        return None
    converted = conversion.value
    targets = conversion.targets
    if len(targets) != 1 or not isinstance(targets[0], nodes.AssignName) or targets[0].name != target.name:
        return None
    if analysis.values.qualified_name(converted.func) not in _CONVERSIONS or len(converted.args) != 1:
        return None
    if not isinstance(converted.args[0], nodes.Name) or converted.args[0].name != target.name:
        return None
    keywords = {keyword.arg: keyword.value for keyword in converted.keywords or ()}
    if not keywords.keys() <= _CONVERSION_KEYWORDS or "dtype" not in keywords:
        return None
    return PlanCall(call, conversion, keywords.get("device"), keywords["dtype"])
