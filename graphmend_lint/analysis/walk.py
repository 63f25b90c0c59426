"""Iterative walks over astroid trees, linear in the size of the tree.

astroid's ``nodes_of_class`` is a recursive generator: each node it yields
passes up through one generator per enclosing node, so a walk costs the
tree's size times its depth. A sum of 3,000 terms (a 3,000-deep ``BinOp``
chain, which Python accepts) made one walk take seconds. These walks keep an
explicit stack instead, and yield in the same (source) order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from astroid import nodes

NodeT = TypeVar("NodeT", bound=nodes.NodeNG)


def descendants(
    root: nodes.NodeNG,
    kind: type[NodeT] | tuple[type[NodeT], ...],
    skip: tuple[type[nodes.NodeNG], ...] = (),
) -> Iterator[NodeT]:
    """Nodes of *kind* under *root* (itself included), in source order.

    Like ``nodes_of_class(kind, skip_klass=skip)``: a descendant of a *skip*
    type is neither yielded nor entered (the root always is).
    """
    stack: list[nodes.NodeNG] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, kind):
            yield node
        children = [child for child in node.get_children() if not (skip and isinstance(child, skip))]
        stack.extend(reversed(children))
