"""GM106: ``assert <tensor>, <message that is not a constant>``."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.fixes.assert_split import split_assert_fix
from graphmend_lint.rules.base import Example
from graphmend_lint.rules.compiled_exception import ACCEPTS_RUNTIME_ERROR, CompiledExceptionRule
from graphmend_lint.rules.gb_types import gb_types

_HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, n: int):\n"


class TensorAssertMessage(CompiledExceptionRule):
    """## What it does
    Flags an `assert` on a tensor value whose message is not a constant
    string: an f-string, a variable, a `%`-formatted string, in code that
    `torch.compile` traces.

    ## Why is this bad
    Dynamo turns `assert <tensor>` and `assert <tensor>, "constant"` into an
    asynchronous assert on the device, with no graph break. With any other
    message it does not: it evaluates the test on the host to decide whether
    to build the message, which is a data-dependent branch (GB0170,
    measured on torch 2.13), with a device sync on every call.

    ## Example
    ```python
    @torch.compile
    def f(x, n: int):
        assert (x > -1e4).all(), f"activations overflowed in layer {n}"
        return x * 2
    ```

    ## Use instead
    ```python
    @torch.compile
    def f(x, n: int):
        if torch.compiler.is_compiling():
            assert (x > -1e4).all(), "activations overflowed in layer {n}"
        else:
            assert (x > -1e4).all(), f"activations overflowed in layer {n}"
        return x * 2
    ```

    ## Fix safety
    The rewrite splits the statement on `torch.compiler.is_compiling()`,
    which Dynamo constant-folds: eagerly the original runs unchanged, and
    compiled code gets the same test with a constant message (the f-string's
    template). Under `torch.compile` a failing check then raises
    `RuntimeError` from the device-side assert, with the template instead of
    the formatted message, where it raised `AssertionError` (every in-graph
    check raises `RuntimeError`, see GM104). As for GM104, a fix must not
    change what a program raises, so by default **no fix is offered**; with
    the rule option `compiled-exception = "runtime-error"` the rewrite is
    offered as **unsafe**. It is never offered when the statement shares its
    line with other code, holds a multi-line string, or sits in a `try` with
    handlers (a handler for `AssertionError` would stop catching it under
    compile); `import torch` is added when nothing binds `torch` there.
    """

    code = "GM106"
    name = "tensor-assert-with-message"
    summary = "`assert <tensor>, <formatted message>` branches on the tensor and splits the graph"
    dynamo_gb = gb_types("GB0170")
    valid = (
        _HEADER + "    assert (x > 0).all(), 'positive inputs only'\n    assert x.isfinite().all()\n    return x\n",
        _HEADER + "    assert x.dim() == 2, f'expected 2-D, got {x.dim()}-D'\n    return x\n",
        "import torch\n\n\ndef f(x, n):\n    assert (x > 0).all(), f'layer {n}'\n    return x\n",
    )
    invalid = (
        Example(_HEADER + "    assert (x > 0).all(), f'layer {n}: negative input'\n    return x\n"),
        Example(
            _HEADER + "    assert (x > 0).all(), f'layer {n}: negative input'\n    return x\n",
            fixed=_HEADER + "    if torch.compiler.is_compiling():\n        assert (x > 0).all(), 'layer {n}: negative input'\n"
            "    else:\n        assert (x > 0).all(), f'layer {n}: negative input'\n    return x\n",
            unsafe=True,
            options=ACCEPTS_RUNTIME_ERROR,
        ),
        Example(_HEADER + "    message = 'bad'\n    assert torch.isfinite(x).all(), message; y = x\n    return y\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for statement, traced in ctx.traced_nodes(nodes.Assert):
            message = statement.fail
            if message is None or isinstance(message, nodes.Const):
                continue
            test = statement.test
            if isinstance(test, nodes.BoolOp) or not ctx.values.is_tensor(test):
                continue
            text = (
                f"`assert {snippet(test)}` with a non-constant message checks the tensor on the host: graph break"
            )
            yield ctx.report(test, text, traced, self.device_check_fix(ctx, statement, "`AssertionError`", partial(split_assert_fix, ctx.analysis, statement)))
