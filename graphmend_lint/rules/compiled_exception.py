"""Rules whose fix moves a host check onto the device, where it raises ``RuntimeError``.

GM104 (``if <tensor>: raise``) and GM106 (``assert <tensor>, <message>``) fix
a break the same way: the check runs in the graph (``torch._assert_async``),
so under torch.compile it raises ``RuntimeError`` instead of the original
exception. Both offer that fix only when the user opts in with the rule option
``compiled-exception = "runtime-error"``, and never inside a ``try`` whose
handlers would stop catching the original exception under compile.
"""

from __future__ import annotations

from collections.abc import Callable

from astroid import nodes

from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Fix
from graphmend_lint.fixes.predicate import declined_fix
from graphmend_lint.rules.base import Rule, RuleOption

#: The ``compiled-exception`` option's values: what the user accepts under torch.compile.
KEEP = "keep"
RUNTIME_ERROR = "runtime-error"
#: The rule options of an example whose fix is offered: the user accepts a RuntimeError under compile.
ACCEPTS_RUNTIME_ERROR = {"compiled-exception": RUNTIME_ERROR}


class CompiledExceptionRule(Rule):
    """A rule whose fix is gated by the ``compiled-exception`` option."""

    options = {
        "compiled-exception": RuleOption(
            KEEP, f'`"{KEEP}"`: no fix; `"{RUNTIME_ERROR}"`: offer the in-graph check as an unsafe fix'
        )
    }

    def device_check_fix(
        self, ctx: RuleContext, check: nodes.Statement, original: str, rewrite: Callable[[], Fix | None]
    ) -> Fix | None:
        """*rewrite*'s fix for *check*, or a declined fix saying why not.

        *original* names the exception the check raises in eager mode.
        """
        if _inside_try_with_handlers(check):
            return declined_fix("a `try` around the check has handlers, which would stop catching it under compile")
        if ctx.options.get("compiled-exception") != RUNTIME_ERROR:
            return declined_fix(
                f"under torch.compile the in-graph check raises `RuntimeError`, not {original}; "
                f'set `compiled-exception = "runtime-error"` for {self.code} to accept that'
            )
        return rewrite()


def _inside_try_with_handlers(node: nodes.NodeNG) -> bool:
    """*node* sits in the body of a ``try`` (in its function) that has ``except`` clauses."""
    child, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.Lambda, nodes.Module)):
        if isinstance(parent, (nodes.Try, nodes.TryStar)) and parent.handlers and child in parent.body:
            return True
        child, parent = parent, parent.parent
    return False
