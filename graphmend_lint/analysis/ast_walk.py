"""``ast.walk``'s nodes as a list, about twice as fast, for the analyses' hottest loops.

``ast.walk`` yields each node through two generators (``iter_child_nodes`` over
``iter_fields``). The binding, scope and pruning analyses walk every statement
of a package more than once, and on transformers those walks were about a
tenth of a cold lint. This collects the same nodes in the same breadth-first
order into a list, for callers that read every node anyway.
"""

from __future__ import annotations

import ast


def ast_nodes(root: ast.AST) -> list[ast.AST]:
    """Every node under *root* (itself first), in ``ast.walk``'s order."""
    found = [root]
    position = 0
    while position < len(found):
        node = found[position]
        position += 1
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, ast.AST):
                found.append(value)
            elif isinstance(value, list):
                found.extend(item for item in value if isinstance(item, ast.AST))
    return found
