"""GM509: ``with <threading lock>:`` in code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.host_values import bound_values
from graphmend_lint.analysis.values import ValueOracle, assigned_self_values, enclosing_class
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

#: Lock types measured to break (GB0142) when a traced ``with`` enters them.
_LOCKS = frozenset({"threading.Lock", "threading.RLock"})
NO_FIX = Fix.advice(
    "no source fix: take the lock around the call of the compiled function, or move the locked code out of it"
)
_MODULE_LOCK = "import threading\n\nimport torch\n\n_lock = threading.Lock()\n\n\n"


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
    a module-level name, or assigned to `self.<attr>`.

    ## Why is this bad
    Dynamo cannot enter a host lock (GB0142, "Unsupported context manager"):
    the graph ends at the `with` and the block runs eagerly. transformers'
    output-capturing hooks are installed under such a lock on a model's first
    call (colpali), and Python 3.11's `functools.cached_property` takes one
    on first access (voxtral). Measured on torch 2.13 for both lock types.

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
    No automatic fix: what the lock protects, and whether the compiled code
    still needs it, is a design decision. The diagnostic carries a
    display-only hint.
    """

    code = "GM509"
    name = "host-lock-in-compiled-code"
    summary = "entering a `threading` lock in compiled code splits the graph"
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
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for statement, traced in ctx.traced_nodes(nodes.With):
            for manager, _ in statement.items:
                if is_lock(ctx.values, manager):
                    message = f"`with {manager.as_string()}` enters a host lock in compiled code: graph break"
                    yield ctx.report(statement, message, traced, NO_FIX)
