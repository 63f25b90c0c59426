"""GM511: a Python operator between a tensor and a plain object in code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.operator_objects import object_operator
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.dunder_call import dunder_call_fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

_OPERATOR = (
    "import torch\n\n\nclass Projector:\n    def __init__(self, w):\n        self.w = w\n\n"
    "    def {method}(self, x):\n        return {body}\n\n\nproj = Projector(torch.eye(4))\n\n\n"
    "@torch.compile\ndef f(x: torch.Tensor):\n    return {expression}\n"
)


class TensorOperatorObject(Rule):
    """## What it does
    Flags a Python operator (`@`, `*`, `+`, ... and `+=` on a tensor)
    between a tensor and an instance of a plain class of the same file that
    implements the operator (`__rmatmul__`, `__mul__`, `__radd__`...), in code
    that `torch.compile` traces: a linear-operator object applied with
    `y @ op`, a scaler with `op * y`.

    ## Why is this bad
    Eagerly the tensor's method gives up on the object and Python calls the
    object's method. Dynamo instead builds the torch operator on both
    operands and cannot turn the object into a graph value ("Failed to
    convert args/kwargs to proxy", GB0055): it gives up on the whole
    function and runs it eagerly (measured, torch 2.13: a global object, one
    built in the function, a `self` attribute, a `@dataclass` instance).
    Classes with `__torch_function__` are traced and are not flagged, nor
    are classes with a base other than `object` or with a hook through which
    torch may take the object as a number or an array (`__float__`,
    `__index__`, `__array__`...).

    ## Example
    ```python
    @torch.compile
    def f(x):
        return x @ proj
    ```

    ## Use instead
    Call the method Python would call:
    ```python
    @torch.compile
    def f(x):
        return proj.__rmatmul__(x)
    ```

    ## Fix safety
    The fix calls the object's method directly, which Dynamo inlines: `y @ op`
    becomes `op.__rmatmul__(y)`, `op * y` becomes `op.__mul__(y)` (measured:
    no break, same outputs). Unsafe: eagerly `y @ op` first asks the tensor,
    which torch answers with `NotImplemented` for such an object (so the
    same method runs), and `op * y` falls back to the tensor when the method
    returns `NotImplemented`: a method that mentions `NotImplemented` is not
    rewritten, nor an object operand other than a name or an attribute
    (the call evaluates it before the tensor). `y += op` gets advice only.
    """

    code = "GM511"
    name = "tensor-operator-object"
    summary = "an operator between a tensor and a plain object makes Dynamo give up on the function"
    dynamo_gb = gb_types("GB0055")
    valid = (
        # the object has no tensor to meet: its own __add__ runs (measured)
        _OPERATOR.format(method="__add__", body="self.w + x", expression="(proj + 1) * x"),
        # __torch_function__ lets torch dispatch to the object (measured: traced)
        "import torch\n\n\nclass Wrapped:\n    def __init__(self, w):\n        self.w = w\n\n    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        return func(*[a.w if isinstance(a, Wrapped) else a for a in args], **(kwargs or {}))\n\n\n"
        "w = Wrapped(torch.eye(4))\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n    return x + w\n",
        # the class has no reflected method: eager raises, not a graph break
        _OPERATOR.format(method="__matmul__", body="self.w @ x", expression="x @ proj"),
    )
    invalid = (
        Example(
            _OPERATOR.format(method="__rmatmul__", body="x @ self.w", expression="x @ proj"),
            _OPERATOR.format(method="__rmatmul__", body="x @ self.w", expression="proj.__rmatmul__(x)"),
            unsafe=True,
        ),
        Example(
            _OPERATOR.format(method="__mul__", body="self.w * x", expression="proj * (x + 1)"),
            _OPERATOR.format(method="__mul__", body="self.w * x", expression="proj.__mul__(x + 1)"),
            unsafe=True,
        ),
        # may return NotImplemented: Python would then try the tensor's method, so no rewrite
        Example(
            _OPERATOR.format(
                method="__mul__", body="self.w * x if isinstance(x, torch.Tensor) else NotImplemented",
                expression="proj * x",
            )
        ),
        Example(
            "import torch\n\n\nclass Bias:\n    def __init__(self, b):\n        self.b = b\n\n"
            "    def __radd__(self, x):\n        return x + self.b\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
            "    y = x * 2\n    y += Bias(x)\n    return y\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced, found in ctx.recognised(object_operator, nodes.BinOp, nodes.AugAssign):
            message = (
                f"operator between a tensor and a `{found.klass.name}` object: Dynamo cannot pass the object to "
                f"the torch operator (Python calls `{found.method.name}`), so it gives up on the function"
            )
            fix = dunder_call_fix(ctx.analysis, found) or Fix.advice(
                f"no automatic fix: call `{found.method.name}` on the object directly"
            )
            yield ctx.report(node, message, traced, fix)
