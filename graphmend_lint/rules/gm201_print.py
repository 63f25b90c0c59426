"""GM201: ``print`` inside code that torch.compile traces.

Also home of :class:`SideEffectRule`, the loop GM201-GM204 share: find the
calls of some :class:`~graphmend_lint.analysis.side_effects.Effect` kinds in
traced code and report each with its fix. A call at the end of the function is
reported too: Dynamo still logs the break there and ``fullgraph=True`` fails.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from typing import ClassVar

from astroid import nodes

from graphmend_lint.analysis.scope import TracedFunction
from graphmend_lint.analysis.side_effects import Effect, LoggerConfig, SideEffect, SideEffectFinder
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Diagnostic, Fix
from graphmend_lint.fixes.side_effect_fix import SideEffectFixes
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.break_sites import break_finder
from graphmend_lint.rules.gb_types import gb_types


class SideEffectRule(Rule):
    """A rule about host side effects of some kinds (subclasses set :attr:`effects`)."""

    effects: ClassVar[frozenset[Effect]]

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        # Every side-effect rule reads GM202's logger options, so that a guard
        # shared by neighbouring print and log calls is the same in each rule.
        loggers = LoggerConfig.from_options(ctx.analysis.settings.options_for("GM202"))
        finder = SideEffectFinder(ctx.values, loggers)
        breaks = break_finder(ctx)
        prints = frozenset(call for call, _, effect in _side_effect_calls_of(ctx, finder) if effect.effect is Effect.PRINT)
        fixes = SideEffectFixes(ctx.analysis, finder, lambda call: breaks.breaks_in_loop_around(call, prints.__contains__))
        for call, traced, effect in _side_effect_calls_of(ctx, finder):
            if effect.effect in self.effects:
                yield ctx.report(call, self.message(effect), traced, self.fix(call, effect, fixes))

    @abc.abstractmethod
    def message(self, effect: SideEffect) -> str:
        """The finding's text for one recognised call."""

    def fix(self, call: nodes.Call, effect: SideEffect, fixes: SideEffectFixes) -> Fix | None:
        """The fix for one finding: the print op or the guard, chosen per call (see ``fixes/side_effect_fix.py``)."""
        return fixes.fix_for(call, effect.effect)


def _side_effect_calls_of(ctx: RuleContext, finder: SideEffectFinder) -> list[tuple[nodes.Call, TracedFunction, SideEffect]]:
    """:func:`_side_effect_calls`, worked out once per file and shared by the side-effect rules."""
    return ctx.analysis.shared("side-effect calls", lambda: _side_effect_calls(ctx, finder))


def _side_effect_calls(ctx: RuleContext, finder: SideEffectFinder) -> list[tuple[nodes.Call, TracedFunction, SideEffect]]:
    """Every traced call with a side effect, whatever its kind (each side-effect rule keeps its kinds)."""
    classified = ((call, traced, finder.classify(call)) for call, traced in ctx.traced_nodes(nodes.Call))
    return [(call, traced, effect) for call, traced, effect in classified if effect is not None]


_DECODER_LOOP = (
    "import torch\n\n\n@torch.compile\ndef decode(x: torch.Tensor):\n    steps = 0\n    while True:\n"
    "        x = x * 0.5\n        steps += 1\n        if x.sum() < 1:\n            break\n"
    "        elif steps == 8:\n            {report}\n            break\n    return x\n"
)


class PrintInCompiledScope(SideEffectRule):
    """## What it does
    Flags calls to the builtin `print` in functions that `torch.compile` traces,
    also spelled `builtins.print(...)`, and the pretty-printer `pprint.pprint` /
    `pprint.pp` (GB0207 on a dict, whose keys it sorts; measured on torch 2.13).

    ## Why is this bad
    Dynamo cannot put a Python `print` into an FX graph. At a `print` it stops
    the graph, runs the call eagerly and resumes in a new frame (GB0059): the
    model loses fusion across the call and pays an extra graph launch on every
    step, and `torch.compile(..., fullgraph=True)` fails. A `print` after the
    last tensor op is no exception: Dynamo still logs the break there. In a
    loop it is worse: Dynamo gives up on the whole function.

    ## Example
    ```python
    @torch.compile
    def step(x):
        y = x * 2
        print("y", y, "norm", y.norm().item())
        return y.relu()
    ```

    ## Use instead
    Print from inside the graph with the print op (torch >= 2.10):
    ```python
    @torch.compile
    def step(x):
        y = x * 2
        torch._higher_order_ops.print("y {!s} norm {}", y, y.norm())
        return y.relu()
    ```

    ## Fix safety
    When every printed value is provably a tensor, a number, a string or
    tensor metadata, and the target torch (`target-torch`, default: the
    installed one) has the op, the fix rewrites the call to
    `torch._higher_order_ops.print`, except inside a loop that breaks the
    graph elsewhere (Tacotron 2's decoder loop, which stops on a tensor gate):
    Dynamo then runs the loop eagerly, and the print op is traced apart there
    and adds a break of its own (GB0059, measured), so only the guard below
    is offered. It is **safe**: eagerly the op calls
    `print(fmt.format(*values))` with a format string that reproduces
    `print`'s own text (`{!s}` per argument, `sep` between them, f-string
    fields kept as written), measured equal; `x.shape` is passed as
    `str(x.shape)` and `y.sum().item()` as the 0-d tensor, whose format is its
    item's. Under `torch.compile` the values are printed at run time, in
    program order, with no break (measured on torch 2.13 with the `eager`,
    `aot_eager` and `inductor` backends and `fullgraph=True`). Differences
    under compile: a tensor that requires grad prints without its `grad_fn`,
    and the op's behaviour under CUDA graphs (`mode="reduce-overhead"`) was
    not measured here.

    Otherwise (`print(..., file=...)`, `end=`, values that may be lists or
    objects, an older torch, or `side-effect-fix = "guard"`) the fix wraps the
    statement in `if not torch.compiler.is_compiling():`. That is **unsafe**:
    eager behaviour is unchanged, but under `torch.compile` the text is not
    printed. Both fixes add `import torch` where the name is not bound.
    """

    code = "GM201"
    name = "print-in-compiled-scope"
    summary = "`print()` in compiled code splits the graph"
    dynamo_gb = gb_types("GB0059")
    effects = frozenset({Effect.PRINT})
    valid = (
        "import torch\n\ndef f(x):\n    print(x)\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n        print(x)\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x, print=print):\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x):\n    y = x * 2\n    torch._higher_order_ops.print('y {!s}', y)\n    return y\n",
    )
    invalid = (
        # Tacotron 2's decoder loop breaks on its gate: Dynamo runs the loop eagerly, where the print op would
        # be traced apart and add a break (GB0059, measured); only the (unsafe) guard is offered
        Example(
            _DECODER_LOOP.format(report='print("Warning! Reached max decoder steps")'),
            fixed=_DECODER_LOOP.format(
                report='if not torch.compiler.is_compiling():\n                print("Warning! Reached max decoder steps")'
            ),
            unsafe=True,
        ),
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    y = x * 2\n    print('y', y, y.shape)  # debug\n    return y\n",
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    y = x * 2\n"
            "    torch._higher_order_ops.print('y {!s} {}', y, str(y.shape))  # debug\n    return y\n",
        ),
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    y = x.cos()\n    print(f'loss={y.sum().item():.3f}')\n"
            "    return y\n",
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    y = x.cos()\n"
            "    torch._higher_order_ops.print('loss={:.3f}', y.sum())\n    return y\n",
        ),
        Example(
            "import sys\nimport torch\n\n@torch.compile\ndef f(x, items):\n    print('items', items, file=sys.stderr)\n"
            "    return x * 2\n",
            fixed="import sys\nimport torch\n\n@torch.compile\ndef f(x, items):\n"
            "    if not torch.compiler.is_compiling():\n        print('items', items, file=sys.stderr)\n"
            "    return x * 2\n",
            unsafe=True,
        ),
    )

    def message(self, effect: SideEffect) -> str:
        return "`print()` in compiled code causes a graph break"
