"""Which objects of traced code were built inside the traced frame, as instances of the file's own classes.

Dynamo holds an object the traced frame constructs (``root = Node(0)``,
``MCTS(config)``, a factory's ``return Runner(k)``) with no *source*: nothing
outside the frame names it. When such an object's method breaks the graph,
Dynamo has to rebuild the bound method to call it after the break, and it
cannot: it logs "Reconstruction failure" (GB0092) at the call, besides the
break inside the method (measured, torch 2.13, for plain classes, dataclasses
and ``NamedTuple`` classes, whether the method breaks itself or through
``self.other()``; MuZero's tree search). The same object passed to a helper
that calls the method does not: the helper then runs as a frame of its own, in
which the object is an argument, which has a source.

Only classes whose every base is the file's own (or ``object``, ``NamedTuple``)
count: constructing an ``nn.Module`` in traced code is a break of its own
(GM506), and other libraries' classes cannot be read.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.lookup import defined_in_file, file_bases, reaching_bindings

_MAX_BINDINGS = 8
#: Bases a plain class may spell that add no behaviour Dynamo treats differently.
_PLAIN_BASES = frozenset({"object", "NamedTuple", "typing.NamedTuple", "Generic", "typing.Generic"})


def fresh_instance_class(receiver: nodes.NodeNG) -> nodes.ClassDef | None:
    """The file's class *receiver* is a new instance of, built in *receiver*'s own frame, else ``None``.

    *receiver* is a constructor call (``Node(0)``), a call of a function of the
    file whose every ``return`` is one, or a name every binding of which (in
    the same frame) is one of those, of the same class.
    """
    if isinstance(receiver, nodes.Call):
        return _constructed_class(receiver)
    if not isinstance(receiver, nodes.Name):
        return None
    try:
        bindings = reaching_bindings(receiver)
    except Exception:  # astroid lookups can fail on odd code; then nothing is proven
        return None
    if not bindings or len(bindings) > _MAX_BINDINGS:
        return None
    classes = set()
    for binding in bindings:
        assignment = binding.parent
        if not (
            isinstance(binding, nodes.AssignName)
            and isinstance(assignment, nodes.Assign)
            and assignment.targets == [binding]
            and binding.frame() is receiver.frame()
        ):
            return None
        classes.add(_constructed_class(assignment.value))
    return classes.pop() if len(classes) == 1 and None not in classes else None


def _constructed_class(value: nodes.NodeNG, depth: int = 0) -> nodes.ClassDef | None:
    if not isinstance(value, nodes.Call) or not isinstance(value.func, nodes.Name):
        return None
    definition = defined_in_file(value.func)
    if isinstance(definition, nodes.ClassDef):
        return definition if _plain(definition) else None
    if isinstance(definition, nodes.FunctionDef) and depth == 0 and not definition.decorators:
        returned = {_constructed_class(r.value, depth + 1) for r in definition.nodes_of_class(nodes.Return)
                    if r.scope() is definition}
        return returned.pop() if len(returned) == 1 and None not in returned else None
    return None


def _plain(klass: nodes.ClassDef) -> bool:
    """Every base is a plain class of the file, or one of :data:`_PLAIN_BASES`."""
    for base in klass.bases:
        spelled = base.as_string()
        if spelled in _PLAIN_BASES:
            continue
        definition = defined_in_file(base) if isinstance(base, nodes.Name) else None
        if not (isinstance(definition, nodes.ClassDef) and definition is not klass and _plain(definition)):
            return False
    return klass.declared_metaclass() is None


def method_of(klass: nodes.ClassDef, name: str) -> nodes.FunctionDef | None:
    """The plain method *name* of *klass* or of its bases in the file (not a static or class method)."""
    for owner in (klass, *file_bases(klass)):
        found = owner.locals.get(name)
        if found:
            method = found[-1]
            if isinstance(method, nodes.FunctionDef) and method.type == "method":
                return method
            return None
    return None
