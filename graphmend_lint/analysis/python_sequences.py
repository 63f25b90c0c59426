"""Values that are provably Python sequences (tuple, list, str), not tensors or mappings.

Indexing a Python sequence with a tensor calls the tensor's ``__index__``,
which copies it to a Python int: Dynamo breaks there (GB0124, measured on
torch 2.13 for a tuple of labels indexed by an element of a tensor, as
torchaudio's ``GreedyCTCDecoder`` does with ``self.labels[i]``). A mapping
indexed by a tensor hashes it instead, so only sequences count, and only
when every way the value is bound shows one: a literal or comprehension, a
name or ``self`` attribute assigned only such values, a parameter annotated
as one or (``__init__``'s included) that every call in the module passes one
for, or a call of a function of this module that returns one.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.lookup import reaching_bindings
from graphmend_lint.analysis.values import ValueOracle, assigned_self_values, enclosing_class

_MAX_DEPTH = 6
#: Annotations (before any ``[...]``) that declare a list, tuple or str.
_SEQUENCE_ANNOTATIONS = frozenset(
    {"list", "List", "typing.List", "tuple", "Tuple", "typing.Tuple", "str"}
)
_MAX_BINDINGS = 8


def python_sequence(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """*node* is provably a tuple, list or str, however it is bound."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, (nodes.Tuple, nodes.List, nodes.ListComp, nodes.JoinedStr)):
        return True
    if isinstance(node, nodes.Const):
        return isinstance(node.value, str)
    if isinstance(node, nodes.IfExp):
        return python_sequence(values, node.body, depth + 1) and python_sequence(values, node.orelse, depth + 1)
    if isinstance(node, nodes.Call):
        return _sequence_call(values, node, depth)
    if isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self":
        klass = enclosing_class(node)
        assigned = list(assigned_self_values(klass, node.attrname))[:_MAX_BINDINGS] if klass is not None else []
        return bool(assigned) and all(python_sequence(values, value, depth + 1) for value in assigned)
    if isinstance(node, nodes.Name):
        return _sequence_name(values, node, depth)
    return False


def _sequence_call(values: ValueOracle, call: nodes.Call, depth: int) -> bool:
    """``torch.jit.annotate(List[T], [])`` (its value), or a call of this file's function or method every
    ``return`` of which gives a sequence (torchaudio's beam search returns ``[b_hypos[idx] for ...]``)."""
    if values.qualified_name(call.func) == "torch.jit.annotate" and len(call.args) == 2:
        return python_sequence(values, call.args[1], depth + 1)
    function = values.called_function(call)
    if function is None or function.name in {"forward", "__call__"}:
        return False
    returned = values.value_sources(call)
    return bool(returned) and all(python_sequence(values, value, depth + 1) for value in returned[:_MAX_BINDINGS])


def _sequence_name(values: ValueOracle, name: nodes.Name, depth: int) -> bool:
    try:
        bindings = reaching_bindings(name)
    except Exception:  # astroid lookups can fail on odd code; then nothing is proven
        return False
    if len(bindings) == 1 and isinstance(bindings[0].parent, nodes.Arguments):
        if _annotated_sequence(values, bindings[0], bindings[0].parent):
            return True
        passed = _passed_for(values, bindings[0], bindings[0].parent)
        return bool(passed) and all(python_sequence(values, value, depth + 1) for value in passed)
    bound = bound_values(name)
    return bool(bound) and all(python_sequence(values, value, depth + 1) for value in bound[:_MAX_BINDINGS])


def _annotated_sequence(values: ValueOracle, parameter: nodes.AssignName, arguments: nodes.Arguments) -> bool:
    """``hypos: List[Hypothesis]``, ``sizes: tuple[int, ...]``, ``str``, also ``Optional[...]`` / ``| None`` of one:
    the parameter is declared a list, tuple or str (``None``, the other choice, cannot be indexed at all)."""
    annotation = ValueOracle._annotation_of(parameter, arguments)
    types = values.annotated_types(annotation) if annotation is not None else frozenset()
    return bool(types) and types <= _SEQUENCE_ANNOTATIONS


def _passed_for(values: ValueOracle, parameter: nodes.AssignName, arguments: nodes.Arguments) -> list[nodes.NodeNG]:
    """What every call of the parameter's function in this module passes for it (empty when any call is unclear)."""
    function = arguments.parent
    if not isinstance(function, nodes.FunctionDef) or arguments.vararg or arguments.kwarg:
        return []
    callee = function.name
    if callee == "__init__":
        klass = function.parent
        if not isinstance(klass, nodes.ClassDef):
            return []
        callee = klass.name
    positional = [argument.name for argument in arguments.args or []]
    if positional and positional[0] in {"self", "cls"}:
        positional = positional[1:]
    if parameter.name not in positional:
        return []
    position = positional.index(parameter.name)
    passed: list[nodes.NodeNG] = []
    for call in values.calls_named(callee):
        if any(isinstance(argument, nodes.Starred) for argument in call.args) or any(
            keyword.arg is None for keyword in call.keywords or ()
        ):
            return []
        by_keyword = [keyword.value for keyword in call.keywords or () if keyword.arg == parameter.name]
        if by_keyword:
            passed.append(by_keyword[0])
        elif position < len(call.args):
            passed.append(call.args[position])
        else:
            return []  # the default: not followed
    return passed
