"""The linear lookup for names rebound many times gives astroid's answer wherever it answers at all."""

from __future__ import annotations

import textwrap

import astroid
import pytest
from astroid import nodes

from graphmend_lint.analysis.lookup import ASTROID_LOOKUP_LIMIT, _straight_line_bindings, astroid_bindings, reaching_bindings

REBINDS = "".join(f"    x = x + {i}\n" for i in range(ASTROID_LOOKUP_LIMIT + 5))

SHAPES = {
    "straight-line": "def f(x):\n" + REBINDS + "    return x\n",
    "branch-after": "def f(x, c):\n" + REBINDS + "    if c:\n        x = 1\n    else:\n        x = 2\n    return x\n",
    "one-sided-branch": "def f(x, c):\n" + REBINDS + "    if c:\n        x = x * 2\n    return x\n",
    "use-in-branch": "def f(x, c):\n" + REBINDS + "    if c:\n        return x\n    x = 3\n    return x\n",
    "else-branch": "def f(x, c):\n" + REBINDS + "    if c:\n        x = 1\n    else:\n        y = x\n    return x\n",
    "try": "def f(x):\n" + REBINDS + "    try:\n        x = int(x)\n    except ValueError:\n        x = 0\n    return x\n",
    "nested-blocks": "def f(x, c):\n    if c:\n" + textwrap.indent(REBINDS, "    ") + "        return x\n    return x\n",
    "loop": "def f(x):\n" + REBINDS + "    for i in range(3):\n        x = x + i\n    return x\n",
    "tuple-targets": "def f(x):\n" + REBINDS.replace("x = x +", "x, y = x, x +") + "    return x\n",
    "augmented": "def f(x):\n" + REBINDS.replace("x = x +", "x +=") + "    return x\n",
    "with": "def f(x, m):\n" + REBINDS + "    with m:\n        x = 1\n    return x\n",
    "comprehension": "def f(x):\n" + REBINDS + "    return [x + i for i in range(3)]\n",
    "early-return": "def f(x, c):\n" + REBINDS + "    if c:\n        x = 0\n        return x\n    return x\n",
}


def astroid_answer(node: nodes.NodeNG) -> list[nodes.NodeNG]:
    _, found = node.lookup(node.name)
    return list(found)


@pytest.mark.parametrize("source", SHAPES.values(), ids=SHAPES.keys())
def test_matches_astroid_on_every_read(source: str) -> None:
    module = astroid.parse(source)
    reads = [n for n in module.nodes_of_class((nodes.Name, nodes.AssignName)) if n.name == "x"]
    assert len(reads) > ASTROID_LOOKUP_LIMIT
    for read in reads:
        assert astroid_bindings(read) == astroid_answer(read), read.lineno


def test_the_shortcut_answers_straight_line_reads() -> None:
    module = astroid.parse(SHAPES["straight-line"])
    last = [n for n in module.nodes_of_class(nodes.Name) if n.name == "x"][-1]
    answer = _straight_line_bindings(last)
    assert answer is not None and len(answer) == 1 and answer[0].lineno == last.lineno - 1


OVERWRITTEN = {
    # source, the line of the read of ``x``, the lines of the bindings that reach it
    "if-else": ("def f(x, c):\n    if c:\n        x = 1\n    else:\n        x = 2\n    return x\n", 6, [3, 5]),
    "elif-chain": (
        "def f(x, c):\n    if c:\n        x = 1\n    elif c > 1:\n        x = 2\n    else:\n        x = 3\n    return x\n",
        8,
        [3, 5, 7],
    ),
    "raising-branch": ("def f(x, c):\n    if c:\n        raise ValueError\n    else:\n        x = 2\n    return x\n", 6, [5]),
    "comprehension": (
        "def f(x, c):\n    if c:\n        x = 1\n    else:\n        x = 2\n    return [x + i for i in range(2)]\n",
        6,
        [3, 5],
    ),
    "enclosing-block": (
        "def f(x, c):\n    if c:\n        x = 1\n    else:\n        x = 2\n    for i in range(2):\n        y = x\n    return y\n",
        7,
        [3, 5],
    ),
    # kept: one side leaves the old value, no ``else``, a ``try``; a read at a loop's top keeps what astroid gives
    "one-sided": ("def f(x, c):\n    if c:\n        x = 1\n    return x\n", 4, [1, 3]),
    "no-else": ("def f(x, c):\n    if c:\n        x = 1\n    elif c > 1:\n        x = 2\n    return x\n", 6, [1, 3, 5]),
    "try": ("def f(x):\n    try:\n        x = int(x)\n    except ValueError:\n        x = 0\n    return x\n", 6, [1, 3, 5]),
    "loop-back-edge": (
        "def f(x, c):\n    for i in range(2):\n        y = x\n        if c:\n            x = 1\n        else:\n            x = 2\n    return y\n",
        3,
        [1],
    ),
}


@pytest.mark.parametrize(("source", "line", "expected"), OVERWRITTEN.values(), ids=OVERWRITTEN.keys())
def test_bindings_every_path_overwrites_do_not_reach(source: str, line: int, expected: list[int]) -> None:
    module = astroid.parse(source)
    read = next(n for n in module.nodes_of_class(nodes.Name) if n.name == "x" and n.lineno == line)
    assert [binding.lineno for binding in reaching_bindings(read)] == expected
