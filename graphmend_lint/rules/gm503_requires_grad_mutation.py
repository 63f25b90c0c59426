"""GM503: changing ``requires_grad`` inside code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.dynamo_settings import settings_turned_on
from graphmend_lint.analysis.grad_leaks import leak_of
from graphmend_lint.analysis.assigned_values import bound_values
from graphmend_lint.analysis.module_attributes import is_tensor_like
from graphmend_lint.analysis.untraceable_torch import TRACE_AUTOGRAD_OPS
from graphmend_lint.analysis.values import Kind, ValueOracle
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Applicability, Diagnostic, Fix
from graphmend_lint.fixes.eager_grad import FACTORIES, eager_grad_fix, enabling_arguments, is_training_flag, is_true
from graphmend_lint.fixes.guard import guard_statements
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

NO_FIX = Fix.advice(
    "no source fix: set `requires_grad` before calling the compiled function (create leaves outside it "
    "and pass them in); inside, use `.detach()` to stop gradients",
)
_HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
EAGER_ONLY_MESSAGE = "Make the tensor require grad only when not compiling (`if not torch.compiler.is_compiling():`)"


def _is_input(name: nodes.Name) -> bool:
    """*name* is a parameter of its function (an input of the compiled region)."""
    try:
        _, bindings = name.lookup(name.name)
    except Exception:
        return False
    return bool(bindings) and all(isinstance(b.parent, nodes.Arguments) for b in bindings)


def _computed_local(name: nodes.NodeNG) -> bool:
    """*name* is a local bound only by assignments of computed values (``h = x[:, None]``).

    Not a parameter, a loop target or a bare alias (``h = x``): turning on
    ``requires_grad`` for those is visible to the caller, or freezes and
    unfreezes parameters, so the eager-only guard would change training.
    """
    values = bound_values(name) if isinstance(name, nodes.Name) else None
    return bool(values) and not any(isinstance(value, (nodes.Name, nodes.Attribute)) for value in values)


def _created_requiring_grad(values: ValueOracle, name: nodes.Name) -> bool:
    """*name* is bound to a factory given ``requires_grad=`` (``torch.zeros_like(q, requires_grad=self.training)``).

    The factory breaks (GB0225), so the resumed frame receives the tensor as
    an input that already requires grad, and ``requires_grad_(True)`` on it
    changes nothing Dynamo sees (MaskFormer, measured).
    """
    bound = bound_values(name) or []
    return any(
        isinstance(value, nodes.Call)
        and values.qualified_name(value.func) in FACTORIES
        and any(
            keyword.arg == "requires_grad" and (is_true(keyword.value) or is_training_flag(keyword.value))
            for keyword in value.keywords or []
        )
        for value in bound
    )


def eager_only_fix(ctx: RuleContext, node: nodes.NodeNG) -> Fix:
    """``h.requires_grad = True`` on a computed local → guarded by ``if not torch.compiler.is_compiling():``.

    wav2vec2 and its family do this to the input view of their feature
    encoder, so that gradient checkpointing has an input that needs grad.
    Dynamo cannot trace it in any form: ``h.requires_grad_()`` and
    ``h.detach().requires_grad_()`` break with GB8985 because the output
    derives from *h* (measured, torch 2.13). Skipping it under compile
    changes no parameter gradient; see the rule's fix safety.
    """
    statement = node.parent
    if not (
        isinstance(node, nodes.AssignAttr)
        and isinstance(statement, nodes.Assign)
        and statement.targets == [node]
        and is_true(statement.value)
        and _computed_local(node.expr)
    ):
        return NO_FIX
    guarded = guard_statements(ctx.analysis, [statement], Applicability.UNSAFE, EAGER_ONLY_MESSAGE)
    return guarded or NO_FIX


def requires_grad_change(values: ValueOracle, node: nodes.NodeNG) -> str | None:
    """A message for a ``requires_grad`` change Dynamo breaks on, else ``None``."""
    if isinstance(node, nodes.AssignAttr):
        # only tensors have a `requires_grad` to set: any receiver not known to be a plain Python value counts
        receiver = node.expr
        is_self = isinstance(receiver, nodes.Name) and receiver.name == "self"  # a module's own attribute
        if node.attrname == "requires_grad" and not is_self and values.kind(receiver) is not Kind.STATIC:
            return "setting `.requires_grad` in compiled code causes a graph break"
        return None
    if not isinstance(node, nodes.Call):
        return None
    func = node.func
    if isinstance(func, nodes.Attribute) and func.attrname == "requires_grad_" and enabling_arguments(node) is not None:
        receiver = func.expr
        if isinstance(receiver, nodes.Attribute) and is_tensor_like(values, receiver):
            return "`requires_grad_()` on a module tensor in compiled code causes a graph break"
        if not values.is_tensor(receiver):
            return None
        if isinstance(receiver, nodes.Name) and _is_input(receiver):
            return "`requires_grad_()` on an input of the compiled function causes a graph break"
        if isinstance(receiver, nodes.Name) and _created_requiring_grad(values, receiver):
            return None  # the factory breaks first (reported there); after it the tensor is an input already on
        leak = leak_of(values, node, autograd_breaks=TRACE_AUTOGRAD_OPS not in settings_turned_on(values))
        return f"`requires_grad_()` on a tensor {leak.what} causes a graph break" if leak is not None else None
    if values.qualified_name(func) in FACTORIES:
        flags = [k.value for k in node.keywords or [] if k.arg == "requires_grad"]
        if any(is_true(flag) for flag in flags):
            return "creating a tensor with `requires_grad=True` in compiled code causes a graph break"
        if any(is_training_flag(flag) for flag in flags):
            return "creating a tensor with `requires_grad=self.training` causes a graph break (only in training)"
    return None


class RequiresGradMutation(Rule):
    """## What it does
    Flags changes of `requires_grad` in code that `torch.compile` traces:

    * `t.requires_grad = ...` on anything not known to be a plain Python
      value (only tensors have the attribute), e.g. parameters being iterated
      (`for p in self.parameters(): p.requires_grad = False`);
    * `t.requires_grad_()` (or `(True)`) on an input of the compiled
      function, on a module's tensor, or on a tensor computed in the
      function that leaves the graph: returned (also
      `return torch.zeros_like(q).requires_grad_()`, and a value derived
      from it, `h = y.detach().requires_grad_(); return h * 3`), stored on
      `self`, or still alive at a `torch.autograd.grad` / `.backward()`
      break;
    * a torch factory called with `requires_grad=True`
      (`torch.zeros(n, requires_grad=True)`), or with
      `requires_grad=self.training`, which breaks only in training
      (MaskFormer's query embeddings; measured).

    ## Why is this bad
    Turning `requires_grad` on or off inside a graph can make a non-leaf a
    leaf or the reverse, which AOTAutograd cannot express, so Dynamo breaks
    the graph (measured, torch 2.13): GB0206 for the attribute assignment,
    GB0125 for `requires_grad_()` on an input, GB8985 when the tensor, or
    one derived from it, is a graph output (returned, stored on the module,
    or alive at a later break), GB0225 for a factory. A loop over parameters
    makes Dynamo give up on the whole function. `requires_grad_(False)`, and
    `requires_grad_()` on a local tensor that stays inside the graph (only
    detached, compared, measured or used under `torch.no_grad()` on its way
    out, or its name bound again first), are traced and not flagged.

    ## Example
    ```python
    @torch.compile
    def f(x):
        w = torch.zeros(4, requires_grad=True)
        return x + w, w
    ```

    ## Use instead
    Create leaves outside the compiled function and pass them in:
    ```python
    w = torch.zeros(4, requires_grad=True)

    @torch.compile
    def f(x, w):
        return x + w, w
    ```

    ## Fix safety
    `h.requires_grad = True` on a local computed inside the function (not
    a parameter, a loop variable or a bare alias) gets an unsafe fix: the
    assignment runs only when not compiling
    (`if not torch.compiler.is_compiling():`). Eager behaviour is unchanged.
    Under `torch.compile` the tensor does not require grad, so autograd
    computes no gradient for it; parameter gradients are unchanged, but an
    output that only needed grad through it (every parameter upstream
    frozen) no longer does, and reentrant gradient checkpointing that relied
    on it gets no input that needs grad. This is what wav2vec2, HuBERT, WavLM
    and their family do in their feature encoder in training (measured on
    transformers 5.23: the GB0206 site goes, outputs and gradients equal).
    No form of the change traces: `h.requires_grad_()` and
    `h.detach().requires_grad_()` break with GB8985 once the output derives
    from *h*.

    A tensor the function creates with a torch factory and switches on,
    `torch.zeros_like(q, requires_grad=self.training)` (MaskFormer) or
    `return torch.zeros_like(q).requires_grad_()` (MRA without its kernel),
    gets an unsafe fix that makes every switch-on of it false under compile:
    `requires_grad=self.training and not torch.compiler.is_compiling()`,
    `t.requires_grad_(not torch.compiler.is_compiling())`. Dynamo folds the
    test, so it traces a plain factory and a no-op `requires_grad_(False)`;
    all switches of the tensor change together, since once the factory no
    longer breaks a later `t.requires_grad_(True)` does (GB8985, measured).
    Eagerly nothing changes. Under compile the tensor is no leaf that needs
    grad: it gets no `.grad`, and an output that needed grad only through
    it (every parameter upstream frozen, or the tensor itself returned)
    no longer does; since the factory's values have no autograd history,
    every other gradient is unchanged (measured on transformers 5.23
    MaskFormer and MRA in training: outputs and gradients equal). Only a
    tensor whose one binding is the factory is rewritten, so that
    `requires_grad_(False)` meets a fresh tensor.

    Everything else gets advice only: where a leaf is created, or
    gradients are switched on and off, decides what autograd computes, so
    moving it is a design change.
    """

    code = "GM503"
    name = "requires-grad-mutation"
    summary = "changing `requires_grad` in compiled code splits the graph"
    dynamo_gb = gb_types("GB0206", "GB0125", "GB8985", "GB0225")
    valid = (
        _HEADER + "    y = x * 2\n    x.requires_grad_(False)\n    z = torch.zeros(4)\n    z.requires_grad_()\n"
        "    return y + 1, (z * 3).sum().detach()\n",
        _HEADER + "    flag = x.requires_grad\n    return x.detach(), flag\n",
        # the name is bound again before the return: the switched-on tensor stays inside (measured)
        _HEADER + "    z = torch.zeros_like(x)\n    z.requires_grad_()\n    z = torch.ones_like(x)\n    return z\n",
        # only a comparison of it leaves: booleans need no grad (measured)
        _HEADER + "    z = torch.zeros_like(x)\n    z.requires_grad_()\n    m = (x + z) > 0\n    return m\n",
        "import torch\n\n\ndef f(x):\n    x.requires_grad = True\n    return x\n",
    )
    invalid = (
        Example(_HEADER + "    y = x * 2\n    y.requires_grad = False\n    return y\n"),
        Example(
            _HEADER + "    h = x[:, None]\n    h.requires_grad = True\n    return h * 2\n",
            _HEADER + "    h = x[:, None]\n    if not torch.compiler.is_compiling():\n        h.requires_grad = True\n"
            "    return h * 2\n",
            unsafe=True,
        ),
        Example(_HEADER + "    x.requires_grad_()\n    return x * 2\n"),
        Example(_HEADER + "    h = x.detach().requires_grad_()\n    out = h * 3\n    return out\n"),
        Example(
            _HEADER + "    h = x.detach().requires_grad_()\n    with torch.enable_grad():\n"
            "        y = (h * h).sum()\n        g = torch.autograd.grad(y, h)[0]\n    return g\n"
        ),
        Example(
            _HEADER + "    z = torch.zeros(4)\n    z.requires_grad_(True)\n    return x + z\n",
            _HEADER + "    z = torch.zeros(4)\n    z.requires_grad_(not torch.compiler.is_compiling())\n    return x + z\n",
            unsafe=True,
        ),
        Example(
            _HEADER + "    w = torch.ones(4, requires_grad=True)\n    return x * w\n",
            _HEADER + "    w = torch.ones(4, requires_grad=not torch.compiler.is_compiling())\n    return x * w\n",
            unsafe=True,
        ),
        # declined: a second binding of the name may not be a fresh tensor
        Example(_HEADER + "    w = torch.ones(4, requires_grad=True)\n    w = w * x\n    return x * w\n"),
        Example(
            "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
            "        for p in self.fc.parameters():\n            p.requires_grad = False\n"
            "        return self.fc(x)\n\n\n"
            "model = torch.compile(M())\n"
        ),
        Example(
            _HEADER + "    return torch.zeros_like(x).requires_grad_()\n",
            _HEADER + "    return torch.zeros_like(x).requires_grad_(not torch.compiler.is_compiling())\n",
            unsafe=True,
        ),
        Example(
            "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        queries = torch.zeros_like(x, requires_grad=self.training)\n        if self.training:\n"
            "            queries.requires_grad_(True)\n        return x + queries\n\n\nmodel = torch.compile(M())\n",
            "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        queries = torch.zeros_like(x, requires_grad=self.training and not torch.compiler.is_compiling())\n"
            "        if self.training:\n            queries.requires_grad_(not torch.compiler.is_compiling())\n"
            "        return x + queries\n\n\nmodel = torch.compile(M())\n",
            unsafe=True,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for node, traced, message in ctx.recognised(requires_grad_change, nodes.AssignAttr, nodes.Call):
            where = node.parent if isinstance(node, nodes.AssignAttr) else node
            fix = eager_only_fix(ctx, node) if isinstance(node, nodes.AssignAttr) else eager_grad_fix(ctx.analysis, ctx.values, node)
            yield ctx.report(where, message, traced, fix or NO_FIX)
