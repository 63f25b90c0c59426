"""GM201: ``print`` inside code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Applicability, Diagnostic
from graphmend_lint.fixes.guard import guard_statement
from graphmend_lint.rules.base import Example, Rule


def is_builtin_call(call: nodes.Call, name: str) -> bool:
    """``name(...)`` where *name* is the builtin, not a local or imported shadow."""
    func = call.func
    if not isinstance(func, nodes.Name) or func.name != name:
        return False
    try:
        _, assignments = func.lookup(name)
    except Exception:
        return False
    return all(assignment.root().name == "builtins" for assignment in assignments)


class PrintInCompiledScope(Rule):
    """## What it does
    Flags calls to the builtin `print` in functions that `torch.compile` traces.

    ## Why is this bad
    Dynamo cannot put I/O into an FX graph. At a `print` it stops the graph,
    runs the call eagerly and starts a new graph after it: the model loses
    fusion across the call and pays an extra graph launch on every step.

    ## Example
    ```python
    @torch.compile
    def step(x):
        y = x * 2
        print("y", y.shape)
        return y.relu()
    ```

    ## Use instead
    Print after the compiled region, or only when not compiling:
    ```python
    @torch.compile
    def step(x):
        y = x * 2
        out = y.relu()
        print("y", y.shape)  # in the epilogue: no second graph
        return out
    ```

    ## Fix safety
    The fix wraps the statement in `if not torch.compiler.is_compiling():`.
    It is **unsafe**: eager behaviour is unchanged, but under `torch.compile`
    the message is no longer printed. It is offered only when the `print` is
    a statement of its own and the file imports `torch`.
    """

    code = "GM201"
    name = "print-in-compiled-scope"
    summary = "`print()` in compiled code splits the graph"
    dynamo_gb = {"GB0059": "Failed to trace builtin operator"}
    default_applicability = Applicability.UNSAFE
    valid = (
        "import torch\n\ndef f(x):\n    print(x)\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n        print(x)\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x, print=print):\n    return x\n",
    )
    invalid = (
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    print(x)  # debug\n    return x * 2\n",
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n"
            "        print(x)  # debug\n    return x * 2\n",
            unsafe=True,
        ),
        Example("import torch as T\n\n@T.compile(fullgraph=False)\ndef f(x):\n    y = x + 1\n    print('y', y.shape)\n    return y\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for call, traced in ctx.traced_nodes(nodes.Call):
            if is_builtin_call(call, "print"):
                statement = call.parent if isinstance(call.parent, nodes.Expr) else None
                fix = guard_statement(ctx.analysis, statement) if statement is not None else None
                yield ctx.report(call, "`print()` in compiled code causes a graph break", traced, fix)
