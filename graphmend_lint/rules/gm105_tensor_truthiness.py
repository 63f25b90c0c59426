"""GM105: ``and`` / ``or`` / ``not`` on tensors used as values."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet, tensor_condition_parts
from graphmend_lint.analysis.numpy_values import is_numpy_value
from graphmend_lint.analysis.values import Kind, ValueOracle
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.predicate import Predicator, predicated_fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

#: Builtins that take the truth of each item they are given (``filter``: of what its function returns).
_TRUTH_BUILTINS = frozenset({"all", "any", "filter"})
#: Where a boolean expression is a condition: GM101-GM104 report those.
_CONDITION_PARENTS = (nodes.If, nodes.While, nodes.IfExp, nodes.Assert, nodes.Comprehension)
ASSERT_FIX_MESSAGE = "Check all operands on the device with elementwise `&`, `|`"
SORT_KEY = Fix.advice(
    "No automatic fix: sort on the device (`torch.stack(keys).argsort()`, then index), or sort outside the "
    "compiled function"
)
ELEMENT_TRUTH = Fix.advice(
    "No automatic fix: reduce on the device (`t.all()`, `t.any()`) and keep the result a tensor "
    "(`torch.where`, `torch._assert_async`), or test it outside the compiled function"
)


def _is_condition(node: nodes.NodeNG) -> bool:
    parent = node.parent
    while isinstance(parent, (nodes.BoolOp, nodes.UnaryOp)):
        node, parent = parent, parent.parent
    if isinstance(parent, (nodes.If, nodes.While, nodes.Assert)):
        return parent.test is node
    if isinstance(parent, nodes.IfExp):
        return parent.test is node
    return isinstance(parent, nodes.Comprehension)


def _final_operand(test: nodes.NodeNG) -> nodes.NodeNG:
    """The operand whose value an ``assert`` itself tests: the last one of its ``and``/``or``. A ``not`` takes
    the truth of its operand on the host before the ``assert`` sees anything (``assert not t.isnan().any()``
    breaks, GB0170, measured on torch 2.13), so it is the operand, and what it negates is tested."""
    while isinstance(test, nodes.BoolOp):
        test = test.values[-1]
    return test


def _tests_on_the_host(test: nodes.NodeNG) -> bool:
    """An ``assert`` test with ``and``/``or``/``not``, which decide on the host (a bare tensor is checked on the device)."""
    return isinstance(test, nodes.BoolOp) or (isinstance(test, nodes.UnaryOp) and test.op == "not")


def _iterated_for_truth(values: ValueOracle, call: nodes.Call) -> nodes.NodeNG | None:
    """The tensor whose truth the builtin ``all`` / ``any`` asks for, element by element: the tensor it
    iterates (fairchem's ``assert all(sizes >= 0)``), or the tensor each item of a comprehension or a list
    is (``any(m.any() for m in masks)``, ``all([a.min() > 0, b.max() < 1])``); also the tensor the
    ``lambda`` given to ``filter`` returns (``filter(lambda t: t.sum() > 0, parts)``). GB0170 at the call,
    measured on torch 2.13."""
    func = call.func
    if not (isinstance(func, nodes.Name) and func.name in _TRUTH_BUILTINS and not call.keywords):
        return None
    if values.qualified_name(func) != func.name:
        return None  # a local or imported ``all``, not the builtin
    if func.name == "filter":
        predicate = call.args[0] if len(call.args) == 2 else None
        return predicate.body if isinstance(predicate, nodes.Lambda) and values.is_tensor(predicate.body) else None
    if len(call.args) != 1:
        return None
    iterated = call.args[0]
    if isinstance(iterated, (nodes.GeneratorExp, nodes.ListComp)):
        return iterated.elt if _traced_as_tensor(values, iterated.elt) else None
    if isinstance(iterated, (nodes.List, nodes.Tuple)):
        return next((element for element in iterated.elts if _traced_as_tensor(values, element)), None)
    return iterated if _traced_as_tensor(values, iterated) else None


def _traced_as_tensor(values: ValueOracle, node: nodes.NodeNG) -> bool:
    """A tensor, or a NumPy array computed in traced code, which Dynamo holds as a tensor (``torch._numpy``):
    ``all(axes > 0)`` over ``np.unique(axes)`` breaks like ``all(t > 0)`` (GB0170, measured, torch 2.13)."""
    return values.is_tensor(node) or is_numpy_value(values, node)


def _sorted_elements(values: ValueOracle, call: nodes.Call) -> nodes.NodeNG | None:
    """The tensor or traced NumPy array ``sorted(...)`` orders element by element, comparing them on the host
    (nnU-Net's ``for ax in sorted(np.unique(axes).astype(int), reverse=True)``, copied into many
    segmentation losses: "Failed to trace builtin operator", GB0059, measured on torch 2.13)."""
    func = call.func
    if not (isinstance(func, nodes.Name) and func.name == "sorted" and values.qualified_name(func) == "sorted"):
        return None
    if len(call.args) != 1 or any(keyword.arg == "key" for keyword in call.keywords or ()):
        return None
    return call.args[0] if _traced_as_tensor(values, call.args[0]) else None


def _sorted_by_tensor(values: ValueOracle, call: nodes.Call) -> nodes.NodeNG | None:
    """The tensor the ``key`` of ``sorted(...)`` / ``xs.sort(...)`` returns: sorting compares the keys on the
    host ("sort with non-constant keys", GB0207, measured on torch 2.13)."""
    func = call.func
    builtin = isinstance(func, nodes.Name) and func.name == "sorted" and values.qualified_name(func) == "sorted"
    method = isinstance(func, nodes.Attribute) and func.attrname == "sort" and not values.is_tensor(func.expr)
    if not (builtin or method):
        return None
    key = next((keyword.value for keyword in call.keywords or () if keyword.arg == "key"), None)
    return key.body if isinstance(key, nodes.Lambda) and values.is_tensor(key.body) else None


class TensorTruthiness(Rule):
    """## What it does
    Flags `t and u`, `t or u` and `not t` on tensors when the result is used
    as a value (assigned, returned, passed on), not as the condition of an
    `if` or `while` (those are GM101-GM104), when an operand it tests is a
    tensor: `not` tests its operand, `and`/`or` every operand but the last,
    which they return as it is (`n > 0 or t.any()` with a Python `n` does not
    break). `bool(t)` is GM301's. In an
    `assert a and b` it flags each tensor operand but the last (and what a
    `not` negates, `assert not t.any()`): the `assert`
    itself checks the last one on the device, but `and`/`or` must decide on
    the host whether to look at the next operand. The builtins `all(t)` and
    `any(t)` over a tensor are flagged too: they test each element's truth
    on the host (fairchem's `assert all(sizes >= 0)`; GB0170 at the call,
    measured on torch 2.13), with advice only; so are `any`/`all` over a
    comprehension or a list of tensor conditions (`any(m.any() for m in
    masks)`, `all([a.min() > 0, b.max() < 1])`: GB0170, with GB8335 for
    a generator, after which Dynamo runs the rest of the frame eagerly), `filter` with a `lambda` that returns a tensor (GB0170),
    and `sorted(...)` / `xs.sort(...)` with a `key` lambda that returns a
    tensor ("sort with non-constant keys", GB0207), and `sorted(t)` of a
    tensor itself, which compares its elements on the host (GB0059). A NumPy
    array computed in traced code counts as a tensor for all of these:
    Dynamo holds it as one, so nnU-Net's `sorted(np.unique(axes).astype(int))`
    and `all(a > 0)` over an array break alike (measured). The builtins `min`,
    `max`, `sum` and `abs` of tensors, and `list`, `reversed`, `enumerate`
    and `zip` over them, trace (measured).

    ## Why is this bad
    `and`, `or` and `not` ask for the truth of a tensor, which needs its value
    on the host: Dynamo breaks the graph (data-dependent branching for
    `and`/`or`; for `not`, a data-dependent operator that makes Dynamo run the
    whole frame eagerly). In an `assert` (measured, torch 2.13)
    `assert (a == 0) and (b == 0)` breaks at `a == 0` (GB0170), and so
    does `assert not t.isnan().any()` (with or without a message: the `not`
    asks first), while `assert b == 0` alone, `assert ~t.isnan().any()`, or
    `assert n > 0 and (b == 0).all()` with a Python `n`, does not.

    ## Example
    ```python
    ok = (y.sum() > 0) and (y.mean() < 10)
    ```

    ## Use instead
    ```python
    ok = (y.sum() > 0) & (y.mean() < 10)
    ```

    ## Fix safety
    For boolean tensors, `a & b` and `a | b` have exactly the values `a and b`
    and `a or b` had, so that fix is **safe**. `not t` gave a Python bool and
    `~t` gives a tensor, so that fix is **unsafe**. Operands that are not
    known to be boolean tensors get no fix: for them `and` returns one of the
    operands, which `&` would not; nor do operands after the first that call
    something not known to be free of effects, since `&` evaluates them where
    `and` may not have.

    In an `assert`, `assert a and b, msg` becomes `assert (a) & (b), msg`
    (**unsafe**): eagerly it passes and fails as before, with the same
    `AssertionError`; under compile Dynamo checks the whole test on the
    device, so a failing operand other than the last raises `RuntimeError`
    instead of `AssertionError` (measured, torch 2.13; the last operand
    already did).
    """

    code = "GM105"
    name = "tensor-truthiness"
    summary = "`and`/`or`/`not` on a tensor value forces a host sync"
    dynamo_gb = gb_types("GB0170", "GB0033", "GB0207", "GB8335", "GB0059")
    valid = (
        # the builtins over Python values, and the tensor reductions
        "import torch\n\n@torch.compile\ndef f(x, flags: list):\n    return x.all(), torch.any(x > 0), all(flags), any([1, 0])\n",
        "import torch\n\n@torch.compile\ndef f(x):\n    if (x > 0).any() and x.sum() > 1:\n        x = x * 2\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x, n: int):\n    assert n > 0 and (x > -9).all()\n    assert x.isnan().sum() == 0, 'nan'\n"
        "    assert ~x.isnan().any()\n    assert not n\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x, a: bool, b: bool):\n    ok = a and b\n    return x * ok\n",
        "import torch\n\n@torch.compile\ndef f(x):\n    has_pads = x.device.type == 'xla' or (x == 0).any()\n    return x, has_pads\n",
        # Python items and shapes: nothing to read back
        "import torch\n\n@torch.compile\ndef f(xs: list[torch.Tensor], names: list[str]):\n"
        "    ok = any(n.startswith('a') for n in names)\n    xs = sorted(xs, key=lambda t: t.shape[0])\n"
        "    return [x * ok for x in xs], sorted(names, key=len)\n",
    )
    invalid = (
        # fairchem's repeat_blocks: the builtins test each element on the host (GB0170, measured)
        Example(
            "import torch\n\n@torch.compile\ndef f(sizes: torch.Tensor):\n    assert all(sizes >= 0)\n"
            "    if any(sizes > 9):\n        sizes = sizes.clamp(max=9)\n    return sizes\n"
        ),
        # tensor conditions as the items of any/all, a filter's lambda, a sort key (GB0170, GB0207; measured)
        Example(
            "import torch\n\n@torch.compile\ndef f(x: torch.Tensor):\n    parts = x.unbind(0)\n"
            "    if any(p.sum() > 0 for p in parts) and all([x.min() > -9, x.max() < 9]):\n        x = x * 2\n"
            "    kept = list(filter(lambda p: p.sum() > 0, parts))\n"
            "    ranked = sorted(parts, key=lambda p: p.sum())\n    return x, kept, ranked\n"
        ),
        Example(
            "import torch\n\n@torch.compile\ndef f(y):\n    ok = (y.sum() > 0) and (y.mean() < 10)\n    return y * ok\n",
            fixed="import torch\n\n@torch.compile\ndef f(y):\n    ok = (y.sum() > 0) & (y.mean() < 10)\n    return y * ok\n",
        ),
        Example(
            "import torch\n\n@torch.compile\ndef f(y):\n    empty = not (y.sum() > 0)\n    return y + empty\n",
            fixed="import torch\n\n@torch.compile\ndef f(y):\n    empty = ~(y.sum() > 0)\n    return y + empty\n",
            unsafe=True,
        ),
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    a, b = x.min(), x.max()\n"
            "    assert (a.isnan().sum() == 0\n            and b.isnan().sum() == 0\n            and (x > -9).all()), 'overflow'\n"
            "    return x\n",
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    a, b = x.min(), x.max()\n"
            "    assert ((a.isnan().sum() == 0) & (b.isnan().sum() == 0) & (x > -9).all()), 'overflow'\n"
            "    return x\n",
            unsafe=True,
        ),
        # latent_ode's masked GRU update: `not` asks for the truth on the host (GB0170, measured)
        Example(
            "import torch\n\n@torch.compile\ndef f(m):\n    s = (torch.sum(m, -1) > 0).float()\n"
            "    assert(not torch.isnan(s).any())\n    return s\n",
            fixed="import torch\n\n@torch.compile\ndef f(m):\n    s = (torch.sum(m, -1) > 0).float()\n"
            "    assert(~torch.isnan(s).any())\n    return s\n",
            unsafe=True,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced in ctx.traced_nodes(nodes.BoolOp, nodes.UnaryOp):
            if isinstance(node, nodes.UnaryOp) and node.op != "not":
                continue
            if isinstance(node.parent, (nodes.BoolOp, nodes.UnaryOp)) or _is_condition(node):
                continue  # reported once, at the outermost expression; conditions are GM101's
            # `and`/`or` test every operand but the last, which they return untested
            tested = node.values[:-1] if isinstance(node, nodes.BoolOp) else [node.operand]
            if not any(ctx.values.kind(operand) is Kind.TENSOR for operand in tested):
                continue
            fix = predicated_fix(ctx.analysis, Predicator.truthiness, node, "Use elementwise `&`, `|`, `~`")
            operator = node.op
            yield ctx.report(node, f"`{operator}` on a tensor value `{snippet(node)}` causes a graph break", traced, fix)
        for call, traced in ctx.traced_nodes(nodes.Call):
            tensor = _iterated_for_truth(ctx.values, call)
            if tensor is not None:
                message = (
                    f"`{call.func.as_string()}()` tests the truth of the tensor `{snippet(tensor)}` "
                    "as a Python bool: graph break"
                )
                yield ctx.report(call, message, traced, ELEMENT_TRUTH)
                continue
            key = _sorted_by_tensor(ctx.values, call)
            if key is not None:
                message = f"sorting by the tensor `{snippet(key)}` compares tensors as Python bools: graph break"
                yield ctx.report(call, message, traced, SORT_KEY)
                continue
            elements = _sorted_elements(ctx.values, call)
            if elements is not None:
                kind = "a tensor" if ctx.values.is_tensor(elements) else "a NumPy array Dynamo holds as a tensor"
                message = f"`sorted()` compares the elements of `{snippet(elements)}`, {kind}, as Python bools: graph break"
                yield ctx.report(call, message, traced, SORT_KEY)
        for statement, traced in ctx.traced_nodes(nodes.Assert):
            if not _tests_on_the_host(statement.test):
                continue
            last = _final_operand(statement.test)
            parts = [part for part in tensor_condition_parts(ctx.values, statement.test) if part is not last]
            message = "`and`/`or`/`not` in an `assert` branches on the tensor value `{}`: graph break"
            fix = predicated_fix(ctx.analysis, Predicator.assert_operands, statement, ASSERT_FIX_MESSAGE)
            yield from ctx.report_condition(parts, message, traced, fix)
