"""Small programs and the lines Dynamo logs their breaks at (torch 2.13.0, CPython 3.11, measured).

Shared by ``test_break_sites.py`` (the linter's findings start on exactly
these lines) and ``test_break_sites_dynamo.py`` (Dynamo still logs exactly
these lines). Each program defines ``f(x, y)``; the measurement calls it with
``x`` and ``y`` all positive, all negative and random, so every branch runs.
Lines count from the top of the program, header included.
"""

from __future__ import annotations

HEADER = "import logging, sys, warnings\nimport torch\nlogger = logging.getLogger('t')\n\n"  # f starts on line 5

#: name -> (body, lines Dynamo logs in this file)
PROGRAMS: dict[str, tuple[str, set[int]]] = {
    # jumps: a comparison breaks at its own line, each operand of and/or on its own
    "and-over-two-lines": ("def f(x, y):\n    if (x.sum() > 0\n            and y.sum() > 0):\n        x = x + 1\n    return x * 2\n", {6, 7}),
    "or-over-two-lines": ("def f(x, y):\n    if (x.sum() > 0 or\n            y.sum() > 0):\n        x = x + 1\n    return x * 2\n", {6, 7}),
    "static-operand-first": ("def f(x, y):\n    if (x.shape[0] > 2\n            and x.sum() > 0\n            and y.sum() > 0):\n        x = x + 1\n    return x * 2\n", {7, 8}),
    "comparison-below-if": ("def f(x, y):\n    if (\n        x.sum() > 0\n    ):\n        x = x + 1\n    return x * 2\n", {7}),
    "comparison-split": ("def f(x, y):\n    if (x.sum()\n            > 0):\n        x = x + 1\n    return x * 2\n", {6}),
    "elif-comparison": ("def f(x, y):\n    if x.shape[0] > 100:\n        x = x + 1\n    elif (x.sum()\n          > 0):\n        x = x - 1\n    return x * 2\n", {8}),
    "while-comparison": ("def f(x, y):\n    while (x.sum()\n            > 100):\n        x = x / 2\n    return x * 2\n", {6}),
    "ternary-comparison": ("def f(x, y):\n    z = (x + 1\n         if x.sum() > 0\n         else x - 1)\n    return z * 2\n", {7}),
    # any other operand jumps at the keyword (or the conditional expression's start), `not` folded in
    "name-below-if": ("def f(x, y):\n    m = x.sum() > 0\n    if (\n            m):\n        x = x + 1\n    return x * 2\n", {7}),
    "call-below-if": ("def f(x, y):\n    if (\n            x.sum()):\n        x = x + 1\n    return x * 2\n", {6}),
    "method-split-in-if": ("def f(x, y):\n    if (x\n            .any()):\n        x = x + 1\n    return x * 2\n", {6}),
    "not-below-if": ("def f(x, y):\n    if (not\n            (x > 0).any()):\n        x = x + 1\n    return x * 2\n", {6}),
    "and-not-operand": ("def f(x, y):\n    if (x.sum() > 0 and\n            not (y > 0).any()):\n        x = x + 1\n    return x * 2\n", {6}),
    "ternary-name": ("def f(x, y):\n    m = x.sum() > 0\n    z = (x + 1\n         if m\n         else x - 1)\n    return z * 2\n", {7}),
    "ternary-not-comparison": ("def f(x, y):\n    z = x + 1 if not (\n        x.sum() > 0) else x - 1\n    return z * 2\n", {7}),
    # ...except inside an and/or nested in another: there it jumps where that nested and/or starts
    "nested-boolop-below-if": ("def f(x, y):\n    if y.shape[0] > 9 or (\n        x.shape[0] > 0 and (x > 0).any()\n    ):\n        x = x + 1\n    return x * 2\n", {7}),
    "nested-same-op-below-if": ("def f(x, y):\n    if y.shape[0] > 0 and (\n        x.shape[0] > 0 and (x > 0).all()\n    ):\n        x = x + 1\n    return x * 2\n", {7}),
    "nested-boolop-split": ("def f(x, y):\n    if (y.shape[0] > 9 or\n            (x.shape[0] > 0 and\n             (x > 0).any())):\n        x = x + 1\n    return x * 2\n", {7}),
    "nested-boolop-on-if-line": ("def f(x, y):\n    if y.shape[0] > 0 and (x.shape[0] > 0 and\n                           (x > 0).all()):\n        x = x + 1\n    return x * 2\n", {6}),
    "nested-boolop-while": ("def f(x, y):\n    while y.shape[0] > 9 or (\n        x.shape[0] > 0 and (x > 0).all()\n    ):\n        return x + 1\n    return x * 2\n", {7}),
    # a comprehension's `if` clause: a comparison at its own line, anything else where the comprehension starts
    "listcomp-filter-comparison": ("def f(x, y):\n    kept = [r for r in x.reshape(-1, 1) if r.shape[0] > 0 and\n            r.sum() > 0]\n    return y * len(kept)\n", {7}),
    "listcomp-filter-call": ("def f(x, y):\n    kept = [\n        r\n        for r in x.reshape(-1, 1)\n        if r.any()]\n    return y * len(kept)\n", {6}),
    # a method of a value breaks at the method's line, however the chain is split
    "item-end-of-chain": ("def f(x, y):\n    n = (x\n         .sum()\n         .item())\n    return x * n\n", {8}),
    "item-after-call-split": ("def f(x, y):\n    n = x.sum(\n    ).item()\n    return x * n\n", {7}),
    "tolist-split": ("def f(x, y):\n    v = (x * 2\n         ).tolist()\n    return x + v[0]\n", {7}),
    "item-inside-condition": ("def f(x, y):\n    if (x.sum()\n            .item() > 0):\n        x = x + 1\n    return x * 2\n", {7}),
    "logger-method-split": ("def f(x, y):\n    y = x * 2\n    (logger\n     .warning('v'))\n    return y + 1\n", {8}),
    "stdout-write-split": ("def f(x, y):\n    y = x * 2\n    (sys.stdout\n     .write('v'))\n    return y + 1\n", {8}),
    "tensor-nonzero-split": ("def f(x, y):\n    y = x * 2\n    u = (y\n         .nonzero())\n    return u.sum() + 1\n", {8}),
    # a function of a module, or a builtin, breaks where the call starts
    "torch-function-split": ("def f(x, y):\n    y = x * 2\n    i = (torch\n         .nonzero(y > 0))\n    return i.sum() + 1\n", {7}),
    "warnings-warn-split": ("def f(x, y):\n    y = x * 2\n    (warnings\n     .warn('v'))\n    return y + 1\n", {7}),
    "int-split": ("def f(x, y):\n    n = int(\n        x.sum())\n    return x * n\n", {6}),
    "print-split": ("def f(x, y):\n    y = x * 2\n    print(\n        'value',\n        y.shape)\n    return y + 1\n", {7}),
    "print-and-item": ("def f(x, y):\n    z = x * 2\n    print('a',\n          z.sum().item())\n    return z + 1\n", {7, 8}),
    # a break in a helper is logged at the helper's line; a helper has no harmless "epilogue"
    "print-ending-a-helper": ("def g(t):\n    u = t * 2\n    print('g')\n    return u\n\ndef f(x, y):\n    z = g(x)\n    return z * 2\n", {7}),
    "print-two-helpers-down": ("def h(t):\n    print('h', t.shape)\n\ndef g(t):\n    h(t)\n    return t + 1\n\ndef f(x, y):\n    z = g(x * 2)\n    return z * 2\n", {6}),
}


def source(name: str) -> str:
    return HEADER + PROGRAMS[name][0]
