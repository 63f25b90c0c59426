"""Calls, in traced code, of modules that carry a module-level backward hook.

Measured on torch 2.13 (CPU): a module with a hook registered by
``register_full_backward_hook`` or ``register_full_backward_pre_hook``, called
from code Dynamo traces, breaks the graph at the call ("Module-level backwards
hooks require compiled autograd.", GB0083), whether the hook was registered in
the module's ``__init__`` (``self.register_full_backward_hook(...)``) or from
outside, and even under ``torch.no_grad()``; the legacy
``register_backward_hook`` breaks there too ("Tensor with grad_fn()",
GB0104). The module torch.compile was given breaks nowhere: its own call runs
eagerly, and Dynamo traces its ``forward`` only. Forward hooks and tensor
hooks (``y.register_hook``) trace.

A module is hooked on evidence only: the file calls a registration on the
very object the traced call calls, that is on the same variable (``layer``,
bound in the same scope), on the same attribute of the same class
(``self.proj`` in its ``__init__``, or ``model.proj`` on an instance of it),
or on ``self`` in a method of the module's class, which hooks every instance.
Registrations inside traced code are GM507's (GB0467); they hook the module
too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from astroid import nodes

from graphmend_lint.analysis.ast_resolution import AstResolution
from graphmend_lint.analysis.resolve import What

#: The ``nn.Module`` methods registering a module-level backward hook (GB0083; the legacy last one GB0104).
REGISTRATIONS = ("register_full_backward_hook", "register_full_backward_pre_hook", "register_backward_hook")
_SELF = "self"


@dataclass(frozen=True)
class HookedCall:
    """A call of a hooked module: how the hook was registered, and where."""

    registration: str  # the registration method
    line: int  # its line


@dataclass
class HookRegistrations:
    """Every backward-hook registration of a file, keyed by the object it hooks."""

    resolution: AstResolution
    names: dict[tuple[str, str], HookedCall] = field(default_factory=dict)  # (binding scope, name)
    attributes: dict[tuple[str, str], HookedCall] = field(default_factory=dict)  # (class, attribute)
    classes: dict[str, HookedCall] = field(default_factory=dict)  # every instance of the class

    def add(self, func: ast.Attribute, scope: str) -> None:
        """Record the object ``func.value.<registration>(...)`` hooks, seen from *scope*."""
        hooked = HookedCall(func.attr, func.lineno)
        receiver = func.value
        if isinstance(receiver, ast.Name) and receiver.id == _SELF and scope in self.resolution.index.owner:
            self.classes.setdefault(self.resolution.index.owner[scope], hooked)
        elif isinstance(receiver, ast.Name):
            found = self.resolution.resolver.lookup(receiver.id, scope)
            if found is not None:
                self.names.setdefault((found.scope, receiver.id), hooked)
        elif isinstance(receiver, ast.Attribute):
            for klass in self._owners(receiver.value, scope):
                self.attributes.setdefault((klass, receiver.attr), hooked)

    def _owners(self, expression: ast.expr, scope: str) -> list[str]:
        """The file's classes *expression* (``self``, ``model``) is an instance of, when that is all it may be."""
        if isinstance(expression, ast.Name) and expression.id == _SELF and scope in self.resolution.index.owner:
            return [self.resolution.index.owner[scope]]
        targets = self.resolution.resolver.resolve(expression, scope)
        if not targets or any(target.what is not What.INSTANCE for target in targets):
            return []
        return [target.name for target in targets]

    def hooked_call(self, call: nodes.Call) -> HookedCall | None:
        """The registration that hooks the module *call* calls (module docstring), else ``None``."""
        func = call.func
        if not (self.names or self.attributes or self.classes) or not isinstance(
            func, (nodes.Name, nodes.Attribute, nodes.Subscript)
        ):
            return None
        scope = self.resolution.scope_of(call)
        if isinstance(func, nodes.Name):
            found = self.resolution.resolver.lookup(func.name, scope)
            if found is not None and (found.scope, func.name) in self.names:
                return self.names[(found.scope, func.name)]
        if isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) and func.expr.name == _SELF:
            klass = self.resolution.index.owner.get(scope)
            for owner in self.resolution.index.mro(klass) if klass else []:
                if (owner, func.attrname) in self.attributes:
                    return self.attributes[(owner, func.attrname)]
            held = self._held_name(klass, func.attrname) if klass else None
            if held is not None:
                return held
        return self._hooked_class(func)

    def _held_name(self, klass: str, attribute: str) -> HookedCall | None:
        """The registration of the hooked variable every ``self.<attribute> = name`` of the class stores."""
        found: list[HookedCall] = []
        for owner in self.resolution.index.mro(klass):
            for value, method in self.resolution.index.self_assignments(owner).get(attribute, []):
                if not isinstance(value, ast.Name):
                    return None
                lookup = self.resolution.resolver.lookup(value.id, method)
                hooked = self.names.get((lookup.scope, value.id)) if lookup else None
                if hooked is None:
                    return None
                found.append(hooked)
        return found[0] if found else None

    def _hooked_class(self, func: nodes.NodeNG) -> HookedCall | None:
        """The registration of the class every value of *func* is an instance of (``self.block``, ``layer``)."""
        if not self.classes:
            return None
        targets = self.resolution.targets(func)
        found = [self._class_hook(target.name) if target.what is What.INSTANCE else None for target in targets]
        hooked = [hook for hook in found if hook is not None]
        return min(hooked, key=lambda hook: hook.line) if hooked and len(hooked) == len(found) else None

    def _class_hook(self, klass: str) -> HookedCall | None:
        for owner in self.resolution.index.mro(klass):
            if owner in self.classes:
                return self.classes[owner]
        return None


def registrations(resolution: AstResolution) -> HookRegistrations:
    """The file's backward-hook registrations, wherever they are (setup code, ``__init__``, traced code)."""
    found = HookRegistrations(resolution)
    for method in REGISTRATIONS:
        for call, scope in resolution.index.calls_named(method):
            if isinstance(call.func, ast.Attribute):
                found.add(call.func, scope)
    return found
