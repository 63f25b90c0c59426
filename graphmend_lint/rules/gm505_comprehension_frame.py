"""GM505: a comprehension whose own frame Dynamo may have to compile, over a non-tuple iterable."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.values import Kind, ValueOracle
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Applicability, Diagnostic
from graphmend_lint.fixes.tuple_iterable import tuple_iterable_fix
from graphmend_lint.rules.base import Example, Rule

COMPREHENSIONS = (nodes.ListComp, nodes.SetComp, nodes.DictComp)
#: Callables whose result iterates as a tuple or range iterator, which Dynamo steps through.
_TUPLE_LIKE_CALLS = frozenset({"tuple", "range"})
_SKIPPED_BODY = (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)
_CAPTURING = "keys = {{f'output_{{k}}': getattr(self, f'output_{{k}}', False) for k in {flags}}}"
_HEADER = (
    "import torch\nfrom torch import nn\n\nFLAGS = {{'hidden_states': 1}}\n\n\nclass Wrapped(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.inner = nn.Linear(4, 4)\n"
    "        self.output_hidden_states = False\n\n    def forward(self, x: torch.Tensor):\n"
    "        {comprehension}\n        try:\n            out = self.inner(x)\n        finally:\n"
    "            keys.clear()\n        return out\n\n\nmodel = torch.compile(Wrapped())\n"
)


def _steps_as_tuple(values: ValueOracle, iterable: nodes.NodeNG) -> bool:
    """The iterable's iterator is a tuple or range iterator (or a tensor's, not judged here)."""
    if isinstance(iterable, nodes.Tuple):
        return True
    if isinstance(iterable, nodes.List):
        return all(isinstance(e, nodes.Const) for e in iterable.elts)  # compiled to a tuple constant
    if isinstance(iterable, nodes.Call) and isinstance(iterable.func, nodes.Name):
        return iterable.func.name in _TUPLE_LIKE_CALLS
    return values.kind(iterable) is Kind.TENSOR


def _holds_module_or_tensor(values: ValueOracle, comprehension: nodes.NodeNG) -> bool:
    """The comprehension's frame closes over ``self`` or a tensor, so Dynamo will try to compile it."""
    targets = [generator.target for generator in comprehension.generators]
    bound = {name.name for target in targets for name in target.nodes_of_class(nodes.AssignName)}
    for name in comprehension.nodes_of_class(nodes.Name):
        if name.name in bound or name.scope() is not comprehension:
            continue
        if name.name == "self" or values.kind(name) is Kind.TENSOR:
            return True
    return False


def frame_skipping_try(function: nodes.FunctionDef) -> nodes.Try | None:
    """The first ``try`` (with ``except`` or ``finally``) in *function* whose body calls something."""
    for statement in function.nodes_of_class(nodes.Try, skip_klass=_SKIPPED_BODY):
        if any(True for part in statement.body for _ in part.nodes_of_class(nodes.Call, skip_klass=_SKIPPED_BODY)):
            return statement
    return None


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in str(text).split(".")[:2] if part.isdigit())


class ComprehensionFrame(Rule):
    """## What it does
    Flags a list, set or dict comprehension over anything but a tuple or a
    `range` (a dict, its `.items()`, a list, `enumerate(...)`, ...) that
    closes over `self` or a tensor, in a compiled function that also has a
    `try` block calling other code. This is the construct in transformers'
    output-capturing wrapper (`utils/output_capturing.py`,
    `recordable_keys = {... for k in capturable_flags}`) that breaks in every
    model whose forward breaks anywhere else.

    ## Why is this bad
    A graph break inside a `try` block (in the function, or in anything it
    calls there) makes Dynamo give up on the whole function and run it
    eagerly. On Python 3.11 and older a comprehension runs in a frame of its
    own, so Dynamo then meets the comprehension's frame separately, with an
    iterator as its argument, and can step only through tuple and range
    iterators: over a dict, list or set it breaks again (GB4347, "Missing
    tp_iternext", measured on torch 2.13 / Python 3.11 for dict, `.items()`,
    `.keys()`, list, set, `enumerate`, `zip`, `sorted` and str iterables). The
    finding only matters when something in the `try` breaks, which is often
    the case for a wrapper around a whole model's forward.

    ## Example
    ```python
    def forward(self, x):
        keys = {f"output_{k}": getattr(self, f"output_{k}", False) for k in FLAGS}
        try:
            out = self.inner(x)
        finally:
            keys.clear()
        return out
    ```

    ## Use instead
    ```python
        keys = {f"output_{k}": getattr(self, f"output_{k}", False) for k in tuple(FLAGS)}
    ```

    ## Fix safety
    The fix wraps the first iterable in `tuple(...)`: same items, same
    order, taken before the first item is evaluated. It is **safe** when the
    comprehension's expressions make no calls, attribute reads or
    assignments (nothing can mutate the iterable while it is iterated), and
    **unsafe** otherwise: an expression that mutates the iterable would see
    the change, or raise "changed size during iteration", only in the
    original.

    ## Options
    `target-version` (default `"3.11"`): the oldest Python the code runs on.
    From `"3.12"` on comprehensions are inlined into their function
    (PEP 709) and the rule is silent.
    """

    code = "GM505"
    name = "comprehension-frame-iterator"
    summary = "a comprehension over a non-tuple breaks in its own frame when Dynamo skips the function"
    dynamo_gb = {"GB4347": "Missing tp_iternext"}
    fix_applicabilities = (Applicability.SAFE, Applicability.UNSAFE)
    options = {"target-version": "3.11"}
    valid = (
        _HEADER.format(comprehension=_CAPTURING.format(flags="tuple(FLAGS)")),
        _HEADER.format(comprehension="keys = {f'output_{k}': False for k in FLAGS}"),
        _HEADER.format(comprehension="keys = [getattr(self, k, None) for k in ('a', 'b')] + [self for _ in range(2)]"),
    )
    invalid = (
        Example(
            _HEADER.format(comprehension=_CAPTURING.format(flags="FLAGS")),
            fixed=_HEADER.format(comprehension=_CAPTURING.format(flags="tuple(FLAGS)")),
            unsafe=True,
        ),
        Example(
            _HEADER.format(comprehension="keys = [x for _ in FLAGS.items()]"),
            fixed=_HEADER.format(comprehension="keys = [x for _ in tuple(FLAGS.items())]"),
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        if _version(ctx.options.get("target-version", "3.11")) >= (3, 12):
            return
        for comprehension, traced in ctx.traced_nodes(*COMPREHENSIONS):
            function = comprehension.frame()
            if not isinstance(function, nodes.FunctionDef):
                continue
            if _steps_as_tuple(ctx.values, comprehension.generators[0].iter):
                continue
            if not _holds_module_or_tensor(ctx.values, comprehension):
                continue
            guarded = frame_skipping_try(function)
            if guarded is None:
                continue
            message = (
                f"comprehension over a non-tuple iterable: if anything in the `try` at line {guarded.lineno} breaks "
                "the graph, Dynamo runs this function eagerly and breaks again in the comprehension's own frame "
                "(Python <= 3.11)"
            )
            yield ctx.report(comprehension, message, traced, tuple_iterable_fix(ctx.analysis, comprehension))
