"""GM508: one tensor passed twice to a custom ``autograd.Function``'s ``apply`` in traced code."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.values import ValueOracle
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.fixes.distinct_view import distinct_views_fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

#: Where ``torch.autograd.Function`` lives, under the names code imports it by.
_FUNCTION_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
_FUNCTION = (
    "import torch\n\n\nclass Scale(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, a, b, x):\n"
    "        return x * a * b\n\n    @staticmethod\n    def backward(ctx, grad):\n        return None, None, grad\n\n\n"
)


def _is_autograd_function(values: ValueOracle, receiver: nodes.NodeNG) -> bool:
    """*receiver* names a class of this file that subclasses ``torch.autograd.Function``."""
    if not isinstance(receiver, nodes.Name):
        return False
    try:
        _, found = receiver.lookup(receiver.name)
    except Exception:  # astroid lookups can fail on odd code: then nothing is known
        return False
    return any(
        isinstance(klass, nodes.ClassDef) and any(values.qualified_name(base) in _FUNCTION_BASES for base in klass.bases)
        for klass in found
    )


def _repeated_tensors(values: ValueOracle, call: nodes.Call) -> list[nodes.Name]:
    """Positional arguments that repeat an earlier one's name and are tensors: the copies to make distinct."""
    seen: set[str] = set()
    repeats = []
    for argument in call.args:
        if not isinstance(argument, nodes.Name):
            continue
        if argument.name in seen and values.is_tensor(argument):
            repeats.append(argument)
        seen.add(argument.name)
    return repeats


class AutogradFunctionDuplicateInput(Rule):
    """## What it does
    Flags a call to a custom `torch.autograd.Function`'s `apply` in traced
    code that passes the same tensor to two of its inputs
    (`Cumulation.apply(mask, mask, q, k, v)`, as YOSO does).

    ## Why is this bad
    Dynamo does not trace `autograd.Function.apply` when one tensor is two
    of its forward inputs (GB6297, "autograd.Function.apply: duplicate
    tensor input"): the graph ends and the call runs eagerly. Measured on
    torch 2.13 in training (YOSO's attention); passing a view of the tensor
    for the repeat traces whole (`fullgraph=True` passes).

    ## Example
    ```python
    context = Cumulation.apply(mask, mask, query, key, value)
    ```

    ## Use instead
    ```python
    context = Cumulation.apply(mask, mask.view_as(mask), query, key, value)
    ```

    ## Fix safety
    Each repeat becomes `t.view_as(t)`: the same values and storage, and
    gradients reach `t` through the view as they did through the repeat
    (measured: outputs and gradients equal). It is **unsafe** because the
    Function now gets two tensor objects where it got one (a forward that
    compares its inputs with `is` sees a difference), and because the
    argument is only inferred to be a tensor: `None` or a NumPy array has no
    `view_as`.
    """

    code = "GM508"
    name = "autograd-function-duplicate-input"
    summary = "one tensor passed twice to an `autograd.Function`'s `apply` splits the graph"
    dynamo_gb = gb_types("GB6297")
    valid = (
        _FUNCTION + "@torch.compile\ndef f(x: torch.Tensor, m: torch.Tensor):\n    return Scale.apply(m, m.view_as(m), x)\n",
        _FUNCTION + "@torch.compile\ndef f(x: torch.Tensor, n: int):\n    return Scale.apply(n, n, x)\n",
        _FUNCTION + "def f(x: torch.Tensor, m: torch.Tensor):\n    return Scale.apply(m, m, x)\n",
    )
    invalid = (
        Example(
            _FUNCTION + "@torch.compile\ndef f(x: torch.Tensor, m: torch.Tensor):\n    return Scale.apply(m, m, x)\n",
            fixed=_FUNCTION
            + "@torch.compile\ndef f(x: torch.Tensor, m: torch.Tensor):\n    return Scale.apply(m, m.view_as(m), x)\n",
            unsafe=True,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for call, traced in ctx.traced_nodes(nodes.Call):
            func = call.func
            if not (isinstance(func, nodes.Attribute) and func.attrname == "apply"):
                continue
            if not _is_autograd_function(ctx.values, func.expr):
                continue
            repeats = _repeated_tensors(ctx.values, call)
            if repeats:
                message = f"`{func.expr.as_string()}.apply` gets `{repeats[0].name}` twice: graph break"
                yield ctx.report(call, message, traced, distinct_views_fix(ctx.analysis, repeats))
