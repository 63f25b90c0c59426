"""``torch.Generator`` objects in code that torch.compile traces.

Measured on torch 2.13 (CPU), Dynamo breaks on all three uses of an explicit
random-number generator:

* passing one to a random op, ``torch.randn(shape, generator=g)``,
  ``t.uniform_(generator=g)``, ``nn.init.uniform_(w, generator=g)``: the
  generator has no graph value ("Failed to convert args/kwargs to proxy",
  GB0055), logged at the op (inside a helper such as diffusers'
  ``randn_tensor``, at the helper's op);
* creating one, ``torch.Generator(...)`` (GB0363, "An opaque object was
  created in the middle of the program");
* its stateful methods, ``g.manual_seed(s)``, ``g.get_state()``,
  ``g.initial_seed()``... (GB7650; ``g.device`` is read without a break).

``generator=None`` traces. An object counts as a generator only when that is
provable: a call of ``torch.Generator`` (optionally ``.manual_seed(...)``
chained), a name or ``self`` attribute every assignment of which is one, a
parameter annotated ``torch.Generator`` with no default, or a
parameter of a helper some traced call of which passes one (that call breaks
at the helper's op). A call of a function of the file is not the random op:
Dynamo logs the break where the helper passes the generator on.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.values import ValueOracle, assigned_self_values, enclosing_class

GENERATOR_CLASS = "torch.Generator"
#: ``torch.Generator`` methods Dynamo refuses (``trace_rules._GENERATOR_METHODS_THAT_GRAPH_BREAK``, torch 2.13).
STATEFUL_METHODS = frozenset(
    {"clone_state", "get_offset", "get_state", "graphsafe_get_state", "graphsafe_set_state", "initial_seed",
     "manual_seed", "seed", "set_offset", "set_state"}
)  # fmt: skip
_MAX_DEPTH = 3


def is_generator(values: ValueOracle, node: nodes.NodeNG, depth: int = 0) -> bool:
    """*node* always holds a ``torch.Generator`` (see the module docstring for what is provable)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(node, nodes.Call):
        return creates_generator(values, node)
    if isinstance(node, nodes.Name):
        bound = bound_values(node)
        if bound:
            return all(is_generator(values, value, depth + 1) for value in bound)
        return _parameter_given_generator(values, node, depth)
    if isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self":
        klass = enclosing_class(node)
        assigned = list(assigned_self_values(klass, node.attrname)) if klass is not None else []
        return bool(assigned) and all(is_generator(values, value, depth + 1) for value in assigned)
    return False


def creates_generator(values: ValueOracle, call: nodes.Call) -> bool:
    """``torch.Generator(...)``, or ``torch.Generator(...).manual_seed(...)`` (which returns the generator)."""
    if values.qualified_name(call.func) == GENERATOR_CLASS:
        return True
    func = call.func
    return (
        isinstance(func, nodes.Attribute)
        and func.attrname == "manual_seed"
        and isinstance(func.expr, nodes.Call)
        and creates_generator(values, func.expr)
    )


def _parameter_given_generator(values: ValueOracle, name: nodes.Name, depth: int) -> bool:
    """*name* is a parameter of a function, and some call of that function in traced code passes a generator for it.

    The function is the one whose parameter *name* reads: its own, or an enclosing one's when *name* is read in a
    nested function (timm's ``_lerp_stochastic_round_bf16_`` passes its ``generator`` on in ``_update_chunk``).
    """
    try:
        _, bindings = name.lookup(name.name)
    except Exception:  # astroid lookups can fail on odd code: nothing provable
        return False
    if len(bindings) != 1 or not isinstance(bindings[0].parent, nodes.Arguments):
        return False
    if _declared_generator(values, bindings[0]):
        return True
    function = bindings[0].parent.parent
    if not isinstance(function, nodes.FunctionDef):
        return False
    position = _positional_index(function, name.name)
    for call in function.root().nodes_of_class(nodes.Call):
        if values.called_function(call) is not function:
            continue
        argument = _argument_for(call, name.name, position)
        if argument is not None and is_generator(values, argument, depth + 1):
            return True
    return False


def _declared_generator(values: ValueOracle, parameter: nodes.AssignName) -> bool:
    """*parameter* is annotated plainly ``torch.Generator`` and has no default, so every call passes one.

    Composer's ``_sample_bernoulli(..., generator: torch.Generator, ...)`` draws ``torch.randint(...,
    generator=generator)`` (GB0055, measured). ``Optional[torch.Generator] = None``, diffusers' spelling,
    may hold ``None``, which traces: only a bare name or attribute as the annotation counts.
    """
    arguments = parameter.parent
    annotation = ValueOracle._annotation_of(parameter, arguments)
    if not isinstance(annotation, (nodes.Name, nodes.Attribute)) or ValueOracle._default_of(parameter, arguments) is not None:
        return False
    return values.annotated_types(annotation) == {GENERATOR_CLASS}


def _positional_index(function: nodes.FunctionDef, parameter: str) -> int | None:
    """The index of *parameter* among the arguments a call passes positionally (``self`` not counted)."""
    names = [argument.name for argument in function.args.posonlyargs + function.args.args]
    if function.is_method() and names and function.type != "staticmethod":
        names = names[1:]
    return names.index(parameter) if parameter in names else None


def _argument_for(call: nodes.Call, parameter: str, position: int | None) -> nodes.NodeNG | None:
    for keyword in call.keywords or []:
        if keyword.arg == parameter:
            return keyword.value
    if position is not None and position < len(call.args) and not any(isinstance(a, nodes.Starred) for a in call.args):
        return call.args[position]
    return None
