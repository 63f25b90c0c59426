"""GM513: an explicit ``torch.Generator`` used in code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.rng_generators import STATEFUL_METHODS, creates_generator, is_generator
from graphmend_lint.analysis.values import ValueOracle
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

NO_FIX = Fix.advice(
    "no automatic fix: draw the random tensor outside the compiled function and pass it in, or use the "
    "global RNG (`torch.manual_seed` before the call), which Dynamo traces; dropping `generator=` changes "
    "the random stream",
)
_HEADER = "import torch\n\ngen = torch.Generator().manual_seed(0)\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"


def generator_use(values: ValueOracle, call: nodes.NodeNG) -> str | None:
    """What *call* does with a ``torch.Generator`` that Dynamo breaks on, as the message says it, else ``None``."""
    if not isinstance(call, nodes.Call):
        return None
    if creates_generator(values, call):
        if isinstance(call.parent, nodes.Attribute) and isinstance(call.parent.parent, nodes.Call):
            chained = call.parent.parent
            if chained.func is call.parent and creates_generator(values, chained):
                return None  # ``torch.Generator().manual_seed(s)``: reported once, on the outer call
        return "creating a `torch.Generator` in compiled code: Dynamo cannot create it in a graph"
    func = call.func
    if isinstance(func, nodes.Attribute) and func.attrname in STATEFUL_METHODS and is_generator(values, func.expr):
        return f"`{snippet(func)}()` in compiled code: Dynamo does not trace a generator's stateful methods"
    if values.called_function(call) is not None:
        return None  # a helper of this file: the break is logged where it passes the generator to the op
    for keyword in call.keywords or []:
        if keyword.arg == "generator" and is_generator(values, keyword.value):
            return (
                f"`generator={snippet(keyword.value)}` is a `torch.Generator`: Dynamo cannot pass it to the "
                "random op, so the graph breaks"
            )
    return None


class RngGenerator(Rule):
    """## What it does
    Flags explicit random-number generators in code that `torch.compile`
    traces: a random op given `generator=` a `torch.Generator`
    (`torch.randn(shape, generator=g)`, `t.uniform_(generator=g)`,
    `nn.init.normal_(w, generator=g)`, also through a helper such as
    diffusers' `randn_tensor`, at its op, when a traced call passes one,
    also when a function nested in the helper uses it), a
    `torch.Generator(...)` created there, and its stateful methods
    (`g.manual_seed(s)`, `g.get_state()`, `g.initial_seed()`...).

    ## Why is this bad
    Dynamo gives a generator no graph value: the random op cannot take it
    ("Failed to convert args/kwargs to proxy", GB0055), a generator cannot be
    created inside a graph (GB0363) and its state methods are not traced
    (GB7650; measured, torch 2.13). Each is a graph break. `generator=None`
    traces and is not flagged; a generator that only arrives as an argument
    of the compiled function is not flagged either (the linter cannot tell
    whether callers pass one).

    ## Example
    ```python
    gen = torch.Generator().manual_seed(0)

    @torch.compile
    def add_noise(x):
        return x + torch.randn(x.shape, generator=gen)
    ```

    ## Use instead
    Draw the noise outside and pass it in:
    ```python
    @torch.compile
    def add_noise(x, noise):
        return x + noise

    add_noise(x, torch.randn(x.shape, generator=gen))
    ```

    ## Fix safety
    No automatic fix: dropping `generator=` would draw from the global RNG,
    a different random stream, and moving the draw changes the function's
    signature.
    """

    code = "GM513"
    name = "rng-generator-in-compiled-code"
    summary = "an explicit `torch.Generator` in compiled code splits the graph"
    dynamo_gb = gb_types("GB0055", "GB0363", "GB7650")
    valid = (
        _HEADER + "    return x + torch.randn(x.shape, generator=None)\n",
        _HEADER + "    return x * 2, gen.device\n",
        # a parameter of the compiled function: what callers pass is unknown
        "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, generator=None):\n"
        "    return x + torch.randn(x.shape, generator=generator)\n",
        # an optional generator may be None, which traces (diffusers' spelling)
        "from typing import Optional\n\nimport torch\n\n\n@torch.compile\n"
        "def f(x: torch.Tensor, generator: Optional[torch.Generator] = None):\n"
        "    return x + torch.randn(x.shape, generator=generator)\n",
        "import torch\n\ngen = torch.Generator().manual_seed(0)\n\n\ndef f(x):\n"
        "    return x + torch.randn(x.shape, generator=gen)\n",
    )
    invalid = (
        # a parameter declared a generator, with no default: every call passes one (composer's Bernoulli sample)
        Example(
            "import torch\n\n\n@torch.compile\ndef f(p: torch.Tensor, generator: torch.Generator):\n"
            "    return torch.bernoulli(p, generator=generator)\n"
        ),
        Example(_HEADER + "    return x + torch.randn(x.shape, generator=gen)\n"),
        Example(_HEADER + "    noise = torch.empty_like(x).uniform_(generator=gen)\n    return x + noise\n"),
        Example(_HEADER + "    gen.manual_seed(3)\n    return x * 2\n"),
        Example(
            "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n    g = torch.Generator().manual_seed(0)\n"
            "    return x + torch.randn(x.shape, generator=g)\n"
        ),
        Example(
            "import torch\n\ngen = torch.Generator().manual_seed(0)\n\n\n"
            "def randn_tensor(shape, generator=None, dtype=None):\n"
            "    return torch.randn(shape, generator=generator, dtype=dtype)\n\n\n"
            "@torch.compile\ndef f(x: torch.Tensor):\n    return x + randn_tensor(x.shape, generator=gen, dtype=x.dtype)\n"
        ),
        # the helper's nested function passes the helper's parameter on (timm's stochastic-rounding EMA)
        Example(
            "import torch\n\ngen = torch.Generator().manual_seed(0)\n\n\ndef add_noise(xs, generator=None):\n"
            "    def _one(x):\n        return x + torch.randn(x.shape, generator=generator)\n\n"
            "    return [_one(x) for x in xs]\n\n\n"
            "@torch.compile\ndef f(x: torch.Tensor):\n    return add_noise([x], generator=gen)[0]\n"
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for call, traced, message in ctx.recognised(generator_use, nodes.Call):
            yield ctx.report(call, message, traced, NO_FIX)
