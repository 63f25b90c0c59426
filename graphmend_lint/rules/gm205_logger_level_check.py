"""GM205: asking a logger for its level inside code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.gates import gate_note, never_traced
from graphmend_lint.analysis.side_effects import Effect, LoggerConfig, SideEffectFinder
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Applicability, Diagnostic, Fix
from graphmend_lint.fixes.compiling_guard import eager_only_check_fix
from graphmend_lint.rules.base import Example, Rule

#: Logger methods that read the level; each is a logger method call to Dynamo.
LEVEL_METHODS = frozenset({"isEnabledFor", "getEffectiveLevel"})
_RECORDS = frozenset({Effect.LOG, Effect.WARN})
NO_FIX = Fix(
    edits=(),
    applicability=Applicability.DISPLAY_ONLY,
    message="no automatic fix: read the level once outside the compiled function, or gate the code with "
    "`if not torch.compiler.is_compiling() and logger.isEnabledFor(...)`",
)
_DEBUG_BLOCK = "    y = x * 2\n    if {test}:\n        logger.debug('y %s', y)\n    return y\n"
_HEADER = (
    "import logging\n\nimport torch\n\nlogger = logging.getLogger(__name__)\n\n\n"
    "@torch.compile\ndef f(x: torch.Tensor):\n"
)


def _gates_only_records(finder: SideEffectFinder, call: nodes.Call) -> bool:
    """*call* is the test, or an ``and`` operand of the test, of an ``if`` (no ``else``) whose body only logs."""
    node: nodes.NodeNG = call
    while isinstance(node.parent, nodes.BoolOp) and node.parent.op == "and":
        node = node.parent
    statement = node.parent
    if not (isinstance(statement, nodes.If) and statement.test is node and not statement.orelse):
        return False
    for child in statement.body:
        if not (isinstance(child, nodes.Expr) and isinstance(child.value, nodes.Call)):
            return False
        effect = finder.classify(child.value)
        if effect is None or effect.effect not in _RECORDS:
            return False
    return True


class LoggerLevelCheck(Rule):
    """## What it does
    Flags reading a logger's level in code that `torch.compile` traces:
    `logger.isEnabledFor(level)`, `logger.getEffectiveLevel()`, and
    comparisons with `logger.level`. A receiver counts as a logger as for
    GM202 (its `logger-names` and `logger-factories` options apply).

    ## Why is this bad
    Dynamo does not trace into `logging`: `isEnabledFor` and
    `getEffectiveLevel` are logger methods like `debug`, so each call ends the
    graph and resumes in a new one (GB0291, "logging.Logger method not
    supported for non-export cases"), even when the answer is `False`.
    Comparing `logger.level` breaks too (GB6215, "Unresolved GetAttrVariable
    comparison"). The usual reason to write the check, skipping expensive
    debug output, backfires under `torch.compile`.

    ## Example
    ```python
    @torch.compile
    def f(x):
        y = x * 2
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("norm %s", y.norm())
        return y + 1
    ```

    ## Use instead
    ```python
    @torch.compile
    def f(x):
        y = x * 2
        if not torch.compiler.is_compiling() and logger.isEnabledFor(logging.DEBUG):
            logger.debug("norm %s", y.norm())
        return y + 1
    ```

    ## Fix safety
    `logger.isEnabledFor(level)` becomes
    `not torch.compiler.is_compiling() and logger.isEnabledFor(level)`
    (parenthesised unless it is an `if`/`while` test or an `and` operand).
    Eagerly the value is the same (`not False and x` is `x`); Dynamo folds
    the check to `False`, so under `torch.compile` whatever it gates no
    longer runs. The fix is **safe** when it is the test (or an `and`
    operand of the test) of an `if` without `else` whose body only logs or
    warns: under compile those records are dropped, exactly as GM202's safe
    guard drops a log call. It is **unsafe** otherwise: gated computation
    would stop running in compiled code.
    `getEffectiveLevel()` and `.level` comparisons get advice only: a
    `False` there would read as level 0, which enables everything.
    """

    code = "GM205"
    name = "logger-level-check"
    summary = "`logger.isEnabledFor()` / level reads in compiled code split the graph"
    dynamo_gb = {
        "GB0291": "logging.Logger method not supported for non-export cases",
        "GB6215": "Unresolved GetAttrVariable comparison",
    }
    fix_applicabilities = (Applicability.SAFE, Applicability.UNSAFE, Applicability.DISPLAY_ONLY)
    valid = (
        _HEADER + "    if not torch.compiler.is_compiling() and logger.isEnabledFor(logging.DEBUG):\n"
        "        logger.debug('x')\n    return x\n",
        "import logging\n\nimport torch\n\nlogger = logging.getLogger(__name__)\n\n\n"
        "def f(x):\n    return x if logger.isEnabledFor(logging.INFO) else x * 2\n",
        _HEADER + "    level = x.abs()\n    return x * level.max()\n",
    )
    invalid = (
        Example(
            _HEADER + _DEBUG_BLOCK.format(test="logger.isEnabledFor(logging.DEBUG)"),
            fixed=_HEADER + _DEBUG_BLOCK.format(test="not torch.compiler.is_compiling() and logger.isEnabledFor(logging.DEBUG)"),
        ),
        Example(
            _HEADER + "    verbose = logger.isEnabledFor(logging.INFO)\n    return x, verbose\n",
            fixed=_HEADER + "    verbose = (not torch.compiler.is_compiling() and logger.isEnabledFor(logging.INFO))\n"
            "    return x, verbose\n",
            unsafe=True,
        ),
        Example(_HEADER + "    if logger.getEffectiveLevel() <= logging.DEBUG:\n        x = x + 1\n    return x\n"),
        Example(_HEADER + "    if logger.level == logging.NOTSET:\n        x = x + 1\n    return x\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        finder = SideEffectFinder(ctx.values, LoggerConfig.from_options(ctx.analysis.settings.options_for("GM202")))
        for node, traced in ctx.traced_nodes(nodes.Call, nodes.Compare):
            if never_traced(node):
                continue
            if isinstance(node, nodes.Call):
                func = node.func
                if not (isinstance(func, nodes.Attribute) and func.attrname in LEVEL_METHODS):
                    continue
                if not finder.is_logger(func.expr):
                    continue
                fix = None
                if func.attrname == "isEnabledFor":
                    fix = eager_only_check_fix(ctx.analysis, node, _gates_only_records(finder, node))
                message = f"`{func.attrname}()` on a logger in compiled code causes a graph break"
                yield ctx.report(node, message + gate_note(ctx.values, node), traced, fix or NO_FIX)
                continue
            for operand in (node.left, *(right for _, right in node.ops)):
                if not (isinstance(operand, nodes.Attribute) and operand.attrname == "level"):
                    continue
                if finder.is_logger(operand.expr):
                    message = "comparing a logger's `.level` in compiled code causes a graph break"
                    yield ctx.report(node, message + gate_note(ctx.values, node), traced, NO_FIX)
                    break
