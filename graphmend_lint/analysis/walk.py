"""Walks over astroid trees, linear in the size of the tree.

astroid's ``nodes_of_class`` is a recursive generator: each node it yields
passes up through one generator per enclosing node, so a walk costs the
tree's size times its depth. A sum of 3,000 terms (a 3,000-deep ``BinOp``
chain, which Python accepts) made one walk take seconds. This walk recurses
with plain calls and collects into a list: linear, and faster than the
generator on ordinary trees too. The pipeline gives it the recursion room
for any depth Python can parse.
"""

from __future__ import annotations

from typing import TypeVar

from astroid import nodes

NodeT = TypeVar("NodeT", bound=nodes.NodeNG)
#: Methods that read a tensor's size: ``v.size()``, ``v.numel()``, ``v.nelement()``, ``v.dim()``.
SIZE_METHODS = frozenset({"size", "numel", "nelement", "dim"})


def descendants(
    root: nodes.NodeNG,
    kind: type[NodeT] | tuple[type[NodeT], ...],
    skip: tuple[type[nodes.NodeNG], ...] = (),
) -> list[NodeT]:
    """Nodes of *kind* under *root* (itself included), in source order.

    Like ``nodes_of_class(kind, skip_klass=skip)``: a descendant of a *skip*
    type is neither collected nor entered (the root always is).
    """
    found: list[NodeT] = []

    def visit(node: nodes.NodeNG) -> None:
        if isinstance(node, kind):
            found.append(node)  # type: ignore[arg-type]
        for child in node.get_children():
            if not (skip and isinstance(child, skip)):
                visit(child)

    visit(root)
    return found


def dotted(node: nodes.NodeNG) -> str | None:
    """``a.b.c`` for a chain of attributes on a name (unresolved), else ``None``."""
    parts: list[str] = []
    while isinstance(node, nodes.Attribute):
        parts.append(node.attrname)
        node = node.expr
    if not isinstance(node, nodes.Name):
        return None
    parts.append(node.name)
    return ".".join(reversed(parts))


def slices_in(index: nodes.NodeNG) -> list[nodes.Slice]:
    """The slices of a subscript's index: ``x[a:b]`` has one, ``x[:, :n, i]`` two."""
    parts = index.elts if isinstance(index, nodes.Tuple) else [index]
    return [part for part in parts if isinstance(part, nodes.Slice)]


def size_receiver(node: nodes.NodeNG) -> nodes.NodeNG | None:
    """``v`` in ``len(v)``, ``v.shape``, ``v.size(...)``, ``v.numel()``: a size read, which is a Python number
    (or tuple of them) whatever ``v`` is; ``None`` for anything else."""
    if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Name) and node.func.name == "len" and node.args:
        return node.args[0]
    if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) and node.func.attrname in SIZE_METHODS:
        return node.func.expr
    if isinstance(node, nodes.Attribute) and node.attrname == "shape":
        return node.expr
    return None
