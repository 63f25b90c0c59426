"""GM509: entering a host lock in code that torch.compile traces: ``with <threading lock>:``, or a
``functools.cached_property`` read on Python < 3.12."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.cached_properties import LOCK_FREE_PYTHON, cached_property_getter
from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.values import ValueOracle, assigned_self_values, enclosing_class
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.cached_property import property_fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

#: Lock types measured to break (GB0142) when a traced ``with`` enters them.
_LOCKS = frozenset({"threading.Lock", "threading.RLock"})
NO_FIX = Fix.advice(
    "no source fix: take the lock around the call of the compiled function, or move the locked code out of it"
)
NO_PROPERTY_FIX = Fix.advice(
    "no source fix: the getter is not provably cheap and pure; compute the value in `__init__`, "
    "or read it once before compiling"
)
_MODULE_LOCK = "import threading\n\nimport torch\n\n_lock = threading.Lock()\n\n\n"
_CONV = (
    "from functools import cached_property as cached\n\nimport torch\nfrom torch import nn\n\n\n"
    "class CausalConv1d(nn.Conv1d):\n    @cached\n    def left_pad(self):\n"
    "        size = (self.kernel_size[0] - 1) * self.dilation[0] + 1\n        return size - self.stride[0]\n\n"
    "    def forward(self, x):\n        x = nn.functional.pad(x, (self.left_pad, 0))\n"
    "        return super().forward(x)\n\n\nmodel = torch.compile(CausalConv1d(2, 3, 3))\n"
)
_PYTHON_311 = {"target_python": "3.11"}


def _makes_lock(values: ValueOracle, node: nodes.NodeNG) -> bool:
    return isinstance(node, nodes.Call) and values.qualified_name(node.func) in _LOCKS


def is_lock(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """``threading.Lock()`` itself, a name bound only to one, or ``self.<attr>`` assigned only one."""
    if isinstance(node, nodes.Name):
        made = bound_values(node) or []
    elif isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self":
        klass = enclosing_class(node)
        made = list(assigned_self_values(klass, node.attrname)) if klass is not None else []
    else:
        made = [node]
    return bool(made) and all(_makes_lock(values, value) for value in made)


class HostLock(Rule):
    """## What it does
    Flags `with lock:` in code that `torch.compile` traces, where `lock` is a
    `threading.Lock` or `threading.RLock`: made in the `with` itself, bound to
    a module-level name, or assigned to `self.<attr>`. When the target Python
    (`target-python`) is older than 3.12, it also flags reading `self.<name>`
    where `<name>` is a `functools.cached_property` of a class in the file
    (under any import alias) that no method assigns.

    ## Why is this bad
    Dynamo cannot enter a host lock (GB0142, "Unsupported context manager"):
    the graph ends at the `with` and the block runs eagerly. transformers'
    output-capturing hooks are installed under such a lock on a model's first
    call (colpali), and Python 3.11's `functools.cached_property` takes one
    (an `RLock`, `functools.py:997`) when it computes its value, so the first
    compiled read skips the whole frame (voxtral_realtime's causal
    convolution). Measured on torch 2.13 / Python 3.11 for both lock types
    and for `cached_property`.

    ## Example
    ```python
    _lock = threading.Lock()

    @torch.compile
    def step(x):
        with _lock:
            y = x + 1
        return y
    ```

    ## Use instead
    ```python
    @torch.compile
    def step(x):
        return x + 1

    with _lock:
        y = step(x)
    ```

    ## Fix safety
    A `with lock:` gets no automatic fix: what the lock protects, and whether
    the compiled code still needs it, is a design decision. The diagnostic
    carries a display-only hint.

    A `cached_property` read gets an **unsafe** fix that turns the getter into
    a `property`, offered only when the getter is provably cheap and pure:
    local assignments and one `return` over `self` attributes, constants,
    arithmetic, comparisons and `abs`/`bool`/`float`/`int`/`len`/`max`/`min`/`round`,
    with no value known to be a tensor. The value is then computed on every
    read, and the attribute is no longer an instance slot: assigning
    `obj.<name> = v` or `del obj.<name>` raises `AttributeError` (a
    `cached_property` stored or dropped the cached value), a change to the
    attributes it reads after the first read is now seen (the cached value
    kept the old one), `obj.__dict__` no longer holds the value, and a class
    with `__slots__` and no `__dict__` (where `cached_property` raised
    `TypeError`) now works. A now-unused `cached_property` import is left in
    place. Any other getter gets a display-only hint.
    """

    code = "GM509"
    name = "host-lock-in-compiled-code"
    summary = "entering a host lock (a `threading` lock, a `cached_property` before Python 3.12) in compiled code splits the graph"
    dynamo_gb = gb_types("GB0142")
    valid = (
        _MODULE_LOCK + "@torch.compile\ndef f(x):\n    return x + 1\n\n\ndef run(x):\n    with _lock:\n        return f(x)\n",
        "import torch\n\n\n@torch.compile\ndef f(x):\n    with torch.no_grad():\n        return x + 1\n",
    )
    invalid = (
        Example(_MODULE_LOCK + "@torch.compile\ndef f(x):\n    with _lock:\n        y = x + 1\n    return y * 2\n"),
        Example(
            "import threading\n\nimport torch\nfrom torch import nn\n\n\nclass Cache(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self._lock = threading.RLock()\n\n"
            "    def forward(self, x):\n        with self._lock:\n            return x * 2\n\n\nmodel = torch.compile(Cache())\n"
        ),
        Example(_CONV, fixed=_CONV.replace("@cached\n", "@property\n"), unsafe=True, settings=_PYTHON_311),
        Example(
            _CONV.replace("import torch\n", "import math\n\nimport torch\n", 1).replace(
                "size - self.stride[0]", "math.ceil(size / self.stride[0])"
            ),
            settings=_PYTHON_311,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for statement, traced in ctx.traced_nodes(nodes.With):
            for manager, _ in statement.items:
                if is_lock(ctx.values, manager):
                    message = f"`with {manager.as_string()}` enters a host lock in compiled code: graph break"
                    yield ctx.report(statement, message, traced, NO_FIX)
        if ctx.analysis.settings.target_python_version < LOCK_FREE_PYTHON:
            yield from self._cached_property_reads(ctx)

    def _cached_property_reads(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        """The first read of each ``cached_property`` in each traced function (later reads find it cached)."""
        seen: set[tuple[nodes.NodeNG, nodes.FunctionDef]] = set()
        for read, traced, getter in ctx.recognised(cached_property_getter, nodes.Attribute):
            if (read.frame(), getter) in seen:
                continue
            seen.add((read.frame(), getter))
            message = (
                f"`{read.as_string()}` computes a `functools.cached_property` under a lock on Python "
                f"{ctx.analysis.settings.target_python} (before 3.12): graph break"
            )
            yield ctx.report(read, message, traced, property_fix(ctx.analysis, getter) or NO_PROPERTY_FIX)
