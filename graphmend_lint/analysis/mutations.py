"""What a function rebinds or mutates in place, and where: enough to move a read later safely.

The ``torch.cond`` rewrite reads a branch's operands in local functions
instead of in the branch. That is only the same value when nothing in between rebinds the name
(``y = ...``, ``del y``, a loop target) or mutates its object in place
(``y.add_(1)``, ``y[0] = 0``, ``y += 1`` on a tensor, ``out=y``, a list's
``append``), also through an alias (``row = y[0]; row.zero_()``). This module
collects those events for one function, on its astroid tree.

Paths are dotted names: ``y``, ``self.cache``. Mutations made inside called
functions are not seen (a documented limit).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from astroid import nodes

from graphmend_lint.analysis.values import STATIC_ATTRIBUTES
from graphmend_lint.analysis.walk import dotted

_IN_PLACE_CONTAINER_METHODS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update", "setdefault",
     "add", "discard", "popitem"}
)  # fmt: skip
#: Tensor methods that always allocate (reductions, math); views and ``.to()`` may not.
_FRESH_TENSOR_METHODS = frozenset(
    {"sum", "mean", "std", "var", "norm", "prod", "amax", "amin", "argmax", "argmin", "count_nonzero",
     "clone", "abs", "exp", "log", "sqrt", "softmax", "log_softmax"}
)  # fmt: skip
_SCOPES = (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)


@dataclass(frozen=True)
class Event:
    """A path rebound (``mutates=False``) or mutated in place at some node of the function."""

    path: str
    mutates: bool
    node: nodes.NodeNG


class Mutations:
    """The rebinding and mutation events of one function's own body (not nested scopes)."""

    def __init__(self, function: nodes.FunctionDef, qualified_name: Callable[[nodes.NodeNG], str | None]) -> None:
        self.function = function
        self._qualified_name = qualified_name
        self.events = list(self._events())
        self.aliases = list(self._aliases())
        self.declared_global = {
            name for node in own_nodes(function) if isinstance(node, (nodes.Global, nodes.Nonlocal)) for name in node.names
        }

    def stable(self, path: str, later: Iterable[Event]) -> bool:
        """Reading *path* after the *later* events gives what it gave before them."""
        later = list(later)
        if path.partition(".")[0] in self.declared_global:
            return False
        if any(affects(event, path) for event in later):
            return False
        return not any(affects(Event(alias, True, self.function), path) for alias in self.mutated_aliases(later))

    def mutated(self, later: Iterable[Event]) -> set[str]:
        """Paths mutated in place by the *later* events, directly or through an alias."""
        later = list(later)
        return {event.path for event in later if event.mutates} | self.mutated_aliases(later)

    def mutated_aliases(self, later: Iterable[Event]) -> set[str]:
        """Names an in-place mutation may reach through ``v = x.view(...)``-style aliases."""
        mutated = {event.path for event in later if event.mutates}
        reached: set[str] = set()
        changed = True
        while changed:
            changed = False
            for target, sources in self.aliases:
                if target in mutated | reached and sources - mutated - reached:
                    reached |= sources - mutated
                    changed = True
        return reached

    def _events(self) -> Iterator[Event]:
        for node in own_nodes(self.function):
            if isinstance(node, (nodes.AssignName, nodes.DelName)) and node.scope() is self.function:
                yield Event(node.name, False, node)
                if isinstance(node.parent, nodes.AugAssign) and not _immutable(node):
                    yield Event(node.name, True, node)
            elif isinstance(node, (nodes.AssignAttr, nodes.DelAttr)):
                path = dotted(node.expr)
                if path is not None:
                    yield Event(f"{path}.{node.attrname}", True, node)
            elif isinstance(node, nodes.Subscript) and _is_store(node):
                path = dotted(node.value)
                if path is not None:
                    yield Event(path, True, node)
            elif isinstance(node, nodes.Call):
                yield from self._call_events(node)

    def _call_events(self, call: nodes.Call) -> Iterator[Event]:
        func = call.func
        if isinstance(func, nodes.Attribute) and _mutating_method(func.attrname):
            path = dotted(func.expr)
            if path is not None:
                yield Event(path, True, call)
        name = self._qualified_name(func) if not isinstance(func, nodes.Attribute) else None
        if name is not None and _mutating_method(name.rsplit(".", 1)[-1]) and call.args:
            path = dotted(call.args[0])
            if path is not None:
                yield Event(path, True, call)
        for keyword in call.keywords or []:
            path = dotted(keyword.value) if keyword.arg == "out" else None
            if path is not None:
                yield Event(path, True, call)

    def _aliases(self) -> Iterator[tuple[str, set[str]]]:
        for node in own_nodes(self.function):
            if isinstance(node, nodes.Assign):
                sources = alias_sources(node.value)
                for target in node.targets:
                    for name in target.nodes_of_class(nodes.AssignName):
                        yield name.name, sources
            elif isinstance(node, nodes.For):
                for name in node.target.nodes_of_class(nodes.AssignName):
                    yield name.name, alias_sources(node.iter)


def affects(event: Event, path: str) -> bool:
    """Whether rebinding/mutating ``event.path`` can change what reading *path* gives."""
    if event.path == path or path.startswith(event.path + "."):
        return True
    return event.mutates and event.path.startswith(path + ".")


def read_path(node: nodes.NodeNG) -> str | None:
    """The path a plain read depends on: ``y.shape`` for ``y.shape`` and ``y.shape[0]``."""
    if isinstance(node, nodes.Subscript) and _constant(node.slice):
        return dotted(node.value)
    return dotted(node)


def paths_read(node: nodes.NodeNG) -> Iterator[str]:
    for inner in [node, *node.nodes_of_class((nodes.Name, nodes.Attribute))]:
        path = dotted(inner)
        if path is not None:
            yield path


def alias_sources(node: nodes.NodeNG) -> set[str]:
    """Names whose object *node*'s value may share memory with (a view, the object itself).

    Arithmetic makes a new tensor; a method or function call may return a
    view of, or the very object passed (``x.view(...)``, ``helper(x)``).
    """
    if isinstance(node, nodes.Name):
        return {node.name}
    if isinstance(node, (nodes.Attribute, nodes.Subscript, nodes.Starred, nodes.NamedExpr)):
        return alias_sources(node.expr if isinstance(node, nodes.Attribute) else node.value)
    if isinstance(node, nodes.Call):
        operands = [*node.args, *(k.value for k in node.keywords or [])]
        if isinstance(node.func, nodes.Attribute):
            operands.append(node.func.expr)
        return {name for operand in operands for name in alias_sources(operand)}
    if isinstance(node, (nodes.Tuple, nodes.List, nodes.Set)):
        return {name for element in node.elts for name in alias_sources(element)}
    if isinstance(node, nodes.IfExp):
        return alias_sources(node.body) | alias_sources(node.orelse)
    if isinstance(node, nodes.BoolOp):
        return {name for value in node.values for name in alias_sources(value)}
    return set()


def fresh_tensor(node: nodes.NodeNG) -> bool:
    """Arithmetic and reductions allocate a new tensor; views and ``.to()`` may not."""
    if isinstance(node, (nodes.BinOp, nodes.UnaryOp, nodes.Compare)):
        return True
    return (
        isinstance(node, nodes.Call)
        and isinstance(node.func, nodes.Attribute)
        and node.func.attrname in _FRESH_TENSOR_METHODS
    )


def reads_metadata(node: nodes.NodeNG) -> bool:
    """``y.shape``, ``y.shape[0]``: in-place writes to ``y``'s values leave them unchanged."""
    while isinstance(node, nodes.Subscript):
        node = node.value
    return isinstance(node, nodes.Attribute) and node.attrname in STATIC_ATTRIBUTES


def own_nodes(function: nodes.FunctionDef) -> Iterator[nodes.NodeNG]:
    """Every node of *function*'s body, not descending into nested scopes."""
    stack: list[nodes.NodeNG] = list(reversed(function.body))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(reversed(list(node.get_children())))


def contains(outer: nodes.NodeNG, inner: nodes.NodeNG) -> bool:
    node: nodes.NodeNG | None = inner
    while node is not None:
        if node is outer:
            return True
        node = node.parent
    return False


def _constant(node: nodes.NodeNG) -> bool:
    """A literal index such as ``0`` or ``-1``."""
    if isinstance(node, nodes.UnaryOp) and node.op in {"-", "+"}:
        node = node.operand
    return isinstance(node, nodes.Const)


def _mutating_method(name: str) -> bool:
    return (name.endswith("_") and not name.endswith("__")) or name in _IN_PLACE_CONTAINER_METHODS


def _is_store(subscript: nodes.Subscript) -> bool:
    parent = subscript.parent
    if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and subscript is not parent.value:
        return True
    if isinstance(parent, (nodes.Tuple, nodes.List)) and isinstance(parent.parent, nodes.Assign):
        return subscript in parent.elts and parent is not parent.parent.value
    if isinstance(parent, nodes.AugAssign) and parent.target is subscript:
        return True
    return isinstance(parent, nodes.Delete)


def _immutable(name: nodes.AssignName) -> bool:
    """``n += 1`` on an int rebinds; on a tensor or list it mutates in place."""
    try:
        values = list(itertools.islice(name.infer(), 8))
    except Exception:  # astroid inference can fail in many ways; assume the worst
        return False
    return bool(values) and all(isinstance(v, nodes.Const) for v in values)
