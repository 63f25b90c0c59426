"""A Python operator between a tensor and an instance of a plain class of the file (GB0055).

``y @ op``, ``op * y``, ``y += op`` where ``op`` is an object whose class
defines the operator (``__rmatmul__``, ``__mul__``, ``__radd__``...): eagerly
the tensor's own method gives up (``NotImplemented``) and Python calls the
object's. Dynamo instead builds the torch operator on both operands and
fails, since a user object has no graph value: "Failed to convert args/kwargs
to proxy" (GB0055), and it gives up on the whole frame (measured, torch
2.13: a global object, one built in the frame, a ``self`` attribute, a
``@dataclass`` instance; ``op + 1``, with no tensor, is traced).

Only classes of the file with no base but ``object`` are considered, whose
instances the operand always is, and which define the operator the call
needs. A class with ``__torch_function__`` is traced (measured), and one with
a conversion hook (``__float__``, ``__index__``, ``__array__``...) may be
accepted by the tensor's method itself: both are left alone.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from astroid import bases, nodes

from graphmend_lint.analysis.lookup import reaching_bindings
from graphmend_lint.analysis.values import ValueOracle, assigned_self_values, enclosing_class

#: Binary operator -> the name of its dunder without underscores.
_DUNDERS = {
    "+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "%": "mod", "**": "pow",
    "@": "matmul", "&": "and", "|": "or", "^": "xor", "<<": "lshift", ">>": "rshift",
}  # fmt: skip
#: Hooks through which torch could take the object as a number or an array, or dispatch to it.
_TORCH_VISIBLE_HOOKS = frozenset(
    {"__torch_function__", "__torch_dispatch__", "__float__", "__int__", "__index__", "__complex__", "__bool__",
     "__array__", "__array_interface__", "__len__", "__getitem__", "__iter__"}
)  # fmt: skip
_INFERENCE_LIMIT = 8


@dataclass(frozen=True)
class ObjectOperator:
    """``tensor <op> obj`` or ``obj <op> tensor``: which operand is the object and which method Python ends up calling."""

    node: nodes.BinOp | nodes.AugAssign
    obj: nodes.NodeNG
    tensor: nodes.NodeNG
    klass: nodes.ClassDef
    method: nodes.FunctionDef  # the object's dunder Python calls: ``__rmatmul__`` for ``y @ op``


def object_operator(values: ValueOracle, node: nodes.NodeNG) -> ObjectOperator | None:
    """*node* as an operator Dynamo cannot build between a tensor and a plain object, else ``None``."""
    if isinstance(node, nodes.BinOp):
        left, right, op = node.left, node.right, node.op
    elif isinstance(node, nodes.AugAssign):
        left, right, op = node.target, node.value, node.op.rstrip("=")
    else:
        return None
    dunder = _DUNDERS.get(op)
    if dunder is None or not _operator_classes(node.root()):
        return None
    if isinstance(node, nodes.BinOp):
        candidates = ((left, right, f"__{dunder}__"), (right, left, f"__r{dunder}__"))
    else:  # ``y += op`` on a tensor falls back to ``op.__radd__(y)``; an object target is not considered
        candidates = ((right, left, f"__r{dunder}__"),)
    for obj, tensor, name in candidates:
        klass = _plain_class_of(obj)
        if klass is None or not _is_tensor(values, tensor):
            continue
        method = _own_method(klass, name)
        if method is not None:
            return ObjectOperator(node, obj, tensor, klass, method)
    return None


_CLASSES_ATTRIBUTE = "_graphmend_operator_classes"


def _operator_classes(module: nodes.Module) -> frozenset[nodes.ClassDef]:
    """The plain classes of the file that define an operator dunder: found once per file.

    Most files have none, and then no operand is inferred at all: astroid's
    inference of an arbitrary operand can walk into every module the file
    imports (a minute on transformers' SuperGlue).
    """
    cached = getattr(module, _CLASSES_ATTRIBUTE, None)
    if cached is None:
        dunders = {f"__{name}__" for name in _DUNDERS.values()} | {f"__r{name}__" for name in _DUNDERS.values()}
        cached = frozenset(
            klass for klass in module.nodes_of_class(nodes.ClassDef)
            if dunders & klass.locals.keys() and _is_plain(klass)
        )
        setattr(module, _CLASSES_ATTRIBUTE, cached)
    return cached


def _is_plain(klass: nodes.ClassDef) -> bool:
    """No base but ``object``, no metaclass keyword, and no hook through which torch could see the object."""
    if klass.keywords or any(not (isinstance(base, nodes.Name) and base.name == "object") for base in klass.bases):
        return False
    return not any(hook in klass.locals for hook in _TORCH_VISIBLE_HOOKS)


def _is_tensor(values: ValueOracle, operand: nodes.NodeNG) -> bool:
    """*operand* is a tensor; for the target of ``y += op``, every binding of ``y`` reaching it holds one."""
    if not isinstance(operand, nodes.AssignName):
        return values.is_tensor(operand)
    try:
        bindings = [binding for binding in reaching_bindings(operand) if binding is not operand]
    except Exception:  # astroid lookups can fail on odd code: then nothing is known
        return False
    assigned = [binding.parent.value for binding in bindings if isinstance(binding.parent, (nodes.Assign, nodes.AnnAssign))]
    return bool(bindings) and len(assigned) == len(bindings) and all(
        value is not None and values.is_tensor(value) for value in assigned
    )


def _plain_class_of(node: nodes.NodeNG) -> nodes.ClassDef | None:
    """The class of this file every value of *node* is an instance of, when it is a plain class.

    ``self.<attr>`` is read from its assignments in the class (astroid does
    not follow them into the pruned tree); anything else is inferred.
    """
    if isinstance(node, (nodes.Const, nodes.BinOp, nodes.JoinedStr)):
        return None
    self_attribute = isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self"
    if self_attribute:
        klass = enclosing_class(node)
        assigned = list(itertools.islice(assigned_self_values(klass, node.attrname), _INFERENCE_LIMIT + 1)) if klass else []
        classes = [_instantiated_class(value) for value in assigned]
    else:
        classes = _inferred_classes(node)
    if not classes or len(classes) > _INFERENCE_LIMIT or None in classes or len(set(classes)) != 1:
        return None
    klass = classes[0]
    return klass if klass in _operator_classes(node.root()) else None


def _instantiated_class(value: nodes.NodeNG) -> nodes.ClassDef | None:
    """The class a constructor call ``Op(...)`` builds, else ``None``."""
    if not isinstance(value, nodes.Call):
        return None
    try:
        inferred = list(itertools.islice(value.func.infer(), 2))
    except Exception:  # astroid inference can fail in many ways: then nothing is known
        return None
    return inferred[0] if len(inferred) == 1 and isinstance(inferred[0], nodes.ClassDef) else None


def _inferred_classes(node: nodes.NodeNG) -> list[nodes.ClassDef | None]:
    """The class of each value astroid infers for *node* (``None`` for a value that is no instance)."""
    try:
        inferred = list(itertools.islice(node.infer(), _INFERENCE_LIMIT + 1))
    except Exception:  # astroid inference can fail in many ways: then nothing is known
        return []
    return [
        value._proxied if isinstance(value, bases.Instance) and isinstance(value._proxied, nodes.ClassDef) else None
        for value in inferred
    ]


def _own_method(klass: nodes.ClassDef, name: str) -> nodes.FunctionDef | None:
    found = klass.locals.get(name, [])
    return found[0] if len(found) == 1 and isinstance(found[0], nodes.FunctionDef) else None
