"""Switch ``requires_grad`` on for a freshly created tensor only when not compiling.

MaskFormer creates its decoder's query input as a zero leaf that needs grad in
training, and MRA returns one when its CUDA kernel is missing::

    inputs_embeds = torch.zeros_like(queries, requires_grad=self.training)   # GB0225
    if self.training:
        inputs_embeds.requires_grad_(True)                                   # GB8985 once the factory no longer breaks
    ...
    return torch.zeros_like(query).requires_grad_()                          # GB8985

No form that turns ``requires_grad`` on traces (measured, torch 2.13): the
factory flag breaks with GB0225, ``requires_grad_()`` with GB8985 as soon as an
output derives from the tensor. So the flag becomes false under compile, in
place, and every switch of the same tensor with it::

    torch.zeros_like(queries, requires_grad=self.training and not torch.compiler.is_compiling())
    inputs_embeds.requires_grad_(not torch.compiler.is_compiling())

Dynamo folds ``torch.compiler.is_compiling()`` to ``True``, so it traces a plain
factory and ``requires_grad_(False)`` on a tensor that needs no grad (a no-op);
eagerly the values are the original ones. ``requires_grad_(False)`` could fail
on a non-leaf, so only a tensor whose one binding is a torch factory (or the
factory call itself) is rewritten: under compile it is a fresh tensor that
needs no grad.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.host_values import sole_binding
from graphmend_lint.analysis.values import ValueOracle
from graphmend_lint.analysis.walk import dotted
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix, Position
from graphmend_lint.fixes.torch_name import torch_name_at

#: torch factories that accept ``requires_grad=``.
FACTORIES = frozenset(
    f"torch.{name}"
    for name in ("zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
                 "logspace", "eye", "tensor", "as_tensor", "zeros_like", "ones_like", "empty_like", "full_like",
                 "rand_like", "randn_like", "randint_like")
)  # fmt: skip
EAGER_GRAD_MESSAGE = "Make the new tensor require grad only when not compiling (`not torch.compiler.is_compiling()`)"


def is_true(node: nodes.NodeNG) -> bool:
    return isinstance(node, nodes.Const) and node.value is True


def is_training_flag(node: nodes.NodeNG) -> bool:
    """``self.training``: true exactly when the module trains (MaskFormer's ``requires_grad=self.training``)."""
    return isinstance(node, nodes.Attribute) and node.attrname == "training" and dotted(node.expr) == "self"


def grad_flag(call: nodes.Call) -> nodes.NodeNG | None:
    """The value of a factory's ``requires_grad=`` keyword, if it has one."""
    return next((k.value for k in call.keywords or [] if k.arg == "requires_grad"), None)


def enabling_arguments(call: nodes.Call) -> list[nodes.NodeNG] | None:
    """The arguments of ``t.requires_grad_()`` / ``(True)`` / ``(requires_grad=True)`` (empty for the first),
    or ``None`` when *call* is no such switch-on (``(False)`` is traced: measured)."""
    func = call.func
    if not (isinstance(func, nodes.Attribute) and func.attrname == "requires_grad_"):
        return None
    arguments = [*call.args, *(k.value for k in call.keywords or [] if k.arg == "requires_grad")]
    if len(arguments) != len(call.args) + len(call.keywords or []):
        return None
    if not arguments or (len(arguments) == 1 and is_true(arguments[0])):
        return arguments
    return None


def eager_grad_fix(analysis: FileAnalysis, values: ValueOracle, node: nodes.Call) -> Fix | None:
    """The unsafe fix for a factory with ``requires_grad=True``/``self.training``, or ``requires_grad_()`` on a
    fresh factory tensor: every switch-on of that tensor made false under compile, or ``None`` if not proven."""
    factory, name = _fresh_tensor(values, node)
    if factory is None:
        return None
    switches = [node] if name is None and enabling_arguments(node) is not None else []
    if name is not None:
        switches = _switches_of(name)
        if switches is None:
            return None
    torch = torch_name_at(analysis, node)
    if torch is None:
        return None
    compiling = f"{torch.name}.compiler.is_compiling()"
    edits: list[Edit] = []
    flag = grad_flag(factory)
    if flag is not None and (is_true(flag) or is_training_flag(flag)):
        text = f"not {compiling}" if is_true(flag) else f"{flag.as_string()} and not {compiling}"
        edits.append(Edit(analysis.start_of(flag), analysis.end_of(flag), text))
    elif flag is not None and not (isinstance(flag, nodes.Const) and flag.value is False):
        return None  # a flag the fix cannot read: what the tensor is under compile is unknown
    for switch in switches:
        arguments = enabling_arguments(switch)
        if arguments:
            edits.append(Edit(analysis.start_of(arguments[0]), analysis.end_of(arguments[0]), f"not {compiling}"))
        else:
            end = analysis.end_of(switch)
            inside = Position(end.line, end.col - 1)  # before the closing parenthesis of `requires_grad_()`
            edits.append(Edit(inside, inside, f"not {compiling}"))
    if not edits:
        return None
    return Fix(edits=(*torch.edits, *edits), applicability=Applicability.UNSAFE, message=EAGER_GRAD_MESSAGE)


def _fresh_tensor(values: ValueOracle, node: nodes.Call) -> tuple[nodes.Call | None, nodes.AssignName | None]:
    """The factory call that creates the tensor *node* switches on, and the local it is bound to (if any).

    *node* is the factory itself, ``<factory>.requires_grad_()``, or ``name.requires_grad_()`` where the
    one binding of ``name`` is a factory call.
    """
    if values.qualified_name(node.func) in FACTORIES:
        statement = node.parent
        if isinstance(statement, nodes.Assign) and statement.value is node and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, nodes.AssignName) and sole_binding(target):
                return node, target
        return (None, None) if isinstance(statement, nodes.Assign) else (node, None)
    if enabling_arguments(node) is None:
        return None, None
    receiver = node.func.expr
    if isinstance(receiver, nodes.Call) and values.qualified_name(receiver.func) in FACTORIES:
        return receiver, None
    if isinstance(receiver, nodes.Name):
        bound = bound_values(receiver)
        if bound and len(bound) == 1 and isinstance(bound[0], nodes.Call):
            factory = bound[0]
            target = factory.parent.targets[0] if isinstance(factory.parent, nodes.Assign) else None
            if values.qualified_name(factory.func) in FACTORIES and isinstance(target, nodes.AssignName):
                return (factory, target) if sole_binding(target) else (None, None)
    return None, None


def _switches_of(target: nodes.AssignName) -> list[nodes.Call] | None:
    """Every ``name.requires_grad_()``/``(True)`` in *target*'s function; ``None`` if ``name`` has its
    ``requires_grad`` changed any other way (which the fix would have to reason about)."""
    switches: list[nodes.Call] = []
    for attribute in target.frame().nodes_of_class((nodes.Attribute, nodes.AssignAttr)):
        if not (isinstance(attribute.expr, nodes.Name) and attribute.expr.name == target.name):
            continue
        if attribute.attrname == "requires_grad_":
            call = attribute.parent
            if not (isinstance(call, nodes.Call) and call.func is attribute and enabling_arguments(call) is not None):
                return None
            switches.append(call)
        elif attribute.attrname == "requires_grad" and isinstance(attribute, nodes.AssignAttr):
            return None
    return switches
