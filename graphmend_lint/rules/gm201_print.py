"""GM201: ``print`` inside code that torch.compile traces.

Also home of :class:`SideEffectRule`, the loop GM201-GM204 share: find the
calls of some :class:`~graphmend_lint.analysis.side_effects.Effect` kinds in
traced code, skip those already in an epilogue, report each with its fix.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from typing import ClassVar

from astroid import nodes

from graphmend_lint.analysis.scope import TracedFunction
from graphmend_lint.analysis.side_effects import (
    Effect,
    LoggerConfig,
    SideEffect,
    SideEffectFinder,
    compiled_with_fullgraph,
)
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Applicability, Diagnostic, Fix
from graphmend_lint.fixes.defer import SideEffectFixes
from graphmend_lint.rules.base import Example, Rule


class SideEffectRule(Rule):
    """A rule about host side effects of some kinds (subclasses set :attr:`effects`)."""

    effects: ClassVar[frozenset[Effect]]

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        # Every side-effect rule reads GM202's logger options, so that the
        # deferral plan (shared by GM201 and GM202) is the same in each.
        loggers = LoggerConfig.from_options(ctx.analysis.settings.options_for("GM202"))
        finder = SideEffectFinder(ctx.values, loggers)
        fixes = SideEffectFixes(ctx.analysis, finder)
        classified = ctx.analysis.shared("side-effect calls", lambda: _side_effect_calls(ctx, finder))
        for call, traced, effect in classified:
            if effect.effect not in self.effects:
                continue
            function = _enclosing_function(call)
            if function is None:
                continue
            if not compiled_with_fullgraph(traced) and finder.in_epilogue(call, function):
                continue
            fix = self.fix(ctx, call, effect, function, traced, fixes)
            yield ctx.report(call, self.message(effect), traced, fix)

    @abc.abstractmethod
    def message(self, effect: SideEffect) -> str:
        """The finding's text for one recognised call."""

    @abc.abstractmethod
    def fix(
        self,
        ctx: RuleContext,
        call: nodes.Call,
        effect: SideEffect,
        function: nodes.FunctionDef,
        traced: TracedFunction,
        fixes: SideEffectFixes,
    ) -> Fix | None:
        """The fix for one finding, or ``None``."""


def _side_effect_calls(ctx: RuleContext, finder: SideEffectFinder) -> list[tuple[nodes.Call, TracedFunction, SideEffect]]:
    """Every traced call with a side effect, whatever its kind (each side-effect rule keeps its kinds)."""
    classified = ((call, traced, finder.classify(call)) for call, traced in ctx.traced_nodes(nodes.Call))
    return [(call, traced, effect) for call, traced, effect in classified if effect is not None]


def _enclosing_function(node: nodes.NodeNG) -> nodes.FunctionDef | None:
    parent = node.parent
    while parent is not None and not isinstance(parent, nodes.FunctionDef):
        parent = parent.parent
    return parent


class DeferrableSideEffectRule(SideEffectRule):
    """GM201/GM202: defer to the epilogue (``side-effect-fix = "defer"``) or guard."""

    def fix(
        self,
        ctx: RuleContext,
        call: nodes.Call,
        effect: SideEffect,
        function: nodes.FunctionDef,
        traced: TracedFunction,
        fixes: SideEffectFixes,
    ) -> Fix | None:
        return fixes.fix_for(call, function, traced)


class PrintInCompiledScope(DeferrableSideEffectRule):
    """## What it does
    Flags calls to the builtin `print` in functions that `torch.compile` traces.

    ## Why is this bad
    Dynamo cannot put I/O into an FX graph. At a `print` it stops the graph,
    runs the call eagerly and starts a new graph after it (GB0059): the model
    loses fusion across the call and pays an extra graph launch on every step.
    In a loop it is worse: Dynamo gives up on the whole function.

    ## Example
    ```python
    @torch.compile
    def step(x):
        y = x * 2
        print("y", y.shape)
        return y.relu()
    ```

    ## Use instead
    Print after the last tensor op, where no second graph forms:
    ```python
    @torch.compile
    def step(x):
        y = x * 2
        _gm_ret = y.relu()
        print("y", y.shape)
        return _gm_ret
    ```
    A `print` already in that position (followed only by other such calls and
    a `return` of plain names) is not flagged.

    ## Fix safety
    The default fix (`side-effect-fix = "defer"`) moves every print and log
    call of the function to its epilogue, in order and with the same text:
    arguments are evaluated at the original point (tensors mutated later are
    snapshotted), calls under a condition set a flag, calls in a loop are
    collected in a list. It is **unsafe**: the output now appears after the
    function's computation, and if the function raises in between the message
    is lost. When deferring could change behaviour (the call's value is used,
    `*args`, a `return` inside `with`/`try`, or the function is a helper that
    another traced function calls, where a deferred call would still split the
    caller's graph) the fix wraps the statement in
    `if not torch.compiler.is_compiling():` instead, which is also what
    `side-effect-fix = "guard"` always does. That is **unsafe** too: eager
    behaviour is unchanged, but under `torch.compile` the message vanishes.
    """

    code = "GM201"
    name = "print-in-compiled-scope"
    summary = "`print()` in compiled code splits the graph"
    dynamo_gb = {"GB0059": "Failed to trace builtin operator"}
    default_applicability = Applicability.UNSAFE
    effects = frozenset({Effect.PRINT})
    valid = (
        "import torch\n\ndef f(x):\n    print(x)\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n        print(x)\n    return x\n",
        "import torch\n\n@torch.compile\ndef f(x, print=print):\n    return x\n",
        # already in the epilogue: after the last tensor op, before a plain return
        "import torch\n\n@torch.compile\ndef f(x):\n    y = x * 2\n    print('y', y.shape)\n    return y\n",
    )
    invalid = (
        Example(
            "import torch\n\n@torch.compile\ndef f(x):\n    print(x)  # debug\n    return x * 2\n",
            fixed="import torch\n\n@torch.compile\ndef f(x):\n    _gm_ret = x * 2\n    print(x)  # debug\n"
            "    return _gm_ret\n",
            unsafe=True,
        ),
        Example(
            "import torch\n\n@torch.compile\ndef f(x, verbose=True):\n    y = x + 1\n    if verbose:\n"
            "        print(f'y={y.sum().item():.2f}')\n    y.mul_(2)\n    return y\n",
            fixed="import torch\n\n@torch.compile\ndef f(x, verbose=True):\n    _gm_flag_1 = False\n    y = x + 1\n"
            "    if verbose:\n        _gm_msg_1 = y.sum()\n        _gm_flag_1 = True\n    y.mul_(2)\n"
            "    if _gm_flag_1:\n        print(f'y={_gm_msg_1.item():.2f}')\n    return y\n",
            unsafe=True,
        ),
        Example("import torch as T\n\n@T.compile(fullgraph=False)\ndef f(x):\n    y = x + 1\n    print('y', y.shape)\n    return y * 2\n"),
    )

    def message(self, effect: SideEffect) -> str:
        return "`print()` in compiled code causes a graph break"
