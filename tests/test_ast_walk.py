"""``ast_nodes`` must be ``ast.walk`` in a list: the same nodes in the same order, since binding lists keep it."""

from __future__ import annotations

import ast
from pathlib import Path

import graphmend_lint.analysis.scope as scope_module
from graphmend_lint.analysis.ast_walk import ast_nodes


def test_same_nodes_in_the_same_order_as_ast_walk() -> None:
    tree = ast.parse(Path(scope_module.__file__).read_text())
    walked = list(ast.walk(tree))
    collected = ast_nodes(tree)
    assert len(collected) == len(walked) > 5_000
    assert all(a is b for a, b in zip(collected, walked))


def test_a_leaf_is_its_own_walk() -> None:
    name = ast.Name(id="x", ctx=ast.Load())
    assert [type(n) for n in ast_nodes(name)] == [ast.Name, ast.Load]
