"""GM205: asking a logger for its level inside code that torch.compile traces."""

from __future__ import annotations

from collections.abc import Iterator

from astroid import nodes

from graphmend_lint.analysis.gates import never_traced
from graphmend_lint.analysis.side_effects import Effect, LoggerConfig, SideEffectFinder
from graphmend_lint.context import RuleContext
from graphmend_lint.diagnostics import Applicability, Diagnostic, Fix
from graphmend_lint.fixes.compiling_guard import eager_only_check_fix
from graphmend_lint.fixes.guard import guard_statements
from graphmend_lint.rules.base import Example, Rule
from graphmend_lint.rules.gb_types import gb_types

#: Logger methods that read the level; each is a logger method call to Dynamo.
LEVEL_METHODS = frozenset({"isEnabledFor", "getEffectiveLevel"})
#: Logger fields Dynamo holds unresolved: comparing one breaks (GB6215), and so does its truth or length
#: (GB4841); measured, torch 2.13, for each of these.
LOGGER_FIELDS = frozenset({"level", "disabled", "handlers", "propagate"})
_RECORDS = frozenset({Effect.LOG, Effect.WARN})
NO_FIX = Fix.advice(
    "no automatic fix: read the level once outside the compiled function, or gate the code with "
    "`if not torch.compiler.is_compiling() and logger.isEnabledFor(...)`",
)
_DEBUG_BLOCK = "    y = x * 2\n    if {test}:\n        logger.debug('y %s', y)\n    return y\n"
_GUARDED_DEBUG_BLOCK = (
    "    y = x * 2\n    if not torch.compiler.is_compiling():\n        if logger.isEnabledFor(logging.DEBUG):\n"
    "            logger.debug('y %s', y)\n    return y\n"
)
_HEADER = (
    "import logging\n\nimport torch\n\nlogger = logging.getLogger(__name__)\n\n\n"
    "@torch.compile\ndef f(x: torch.Tensor):\n"
)


def _record_only_branch(finder: SideEffectFinder, call: nodes.Call) -> nodes.If | None:
    """The ``if`` (no ``else``) *call* is the test of (or an ``and`` operand of it) when its body only logs or warns."""
    node: nodes.NodeNG = call
    while isinstance(node.parent, nodes.BoolOp) and node.parent.op == "and":
        node = node.parent
    statement = node.parent
    if not (isinstance(statement, nodes.If) and statement.test is node and not statement.orelse):
        return None
    for child in statement.body:
        if not (isinstance(child, nodes.Expr) and isinstance(child.value, nodes.Call)):
            return None
        effect = finder.classify(child.value)
        if effect is None or effect.effect not in _RECORDS:
            return None
    return statement


class LoggerLevelCheck(Rule):
    """## What it does
    Flags reading a logger's level in code that `torch.compile` traces:
    `logger.isEnabledFor(level)`, `logger.getEffectiveLevel()`, comparisons
    with `logger.level`, and the logger's own fields used as conditions or
    counted: `if logger.handlers and not logger.disabled:`,
    `len(logger.handlers)`, `logger.propagate`. A receiver counts as a logger as for
    GM202 (its `logger-names` and `logger-factories` options apply).

    ## Why is this bad
    Dynamo does not trace into `logging`: `isEnabledFor` and
    `getEffectiveLevel` are logger methods like `debug`, so each call ends the
    graph and resumes in a new one (GB0291, "logging.Logger method not
    supported for non-export cases"), even when the answer is `False`.
    Comparing `logger.level` (or `.disabled`, `.handlers`, `.propagate`)
    breaks too (GB6215, "Unresolved GetAttrVariable comparison"), and so does
    the truth or `len()` of one of those fields (GB4841, "Unsupported
    python_type() call", after which Dynamo runs the rest of the frame
    eagerly); passing a field along (`flag = logger.disabled`) traces
    (measured, torch 2.13). The usual reason to write the check, skipping expensive
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
        if not torch.compiler.is_compiling():
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug("norm %s", y.norm())
        return y + 1
    ```

    ## Fix safety
    When the check is the test (or an `and` operand of the test) of an `if`
    without `else` whose body only logs or warns, the whole `if` goes under
    `if not torch.compiler.is_compiling():`, GM202's guard, and the fix is
    **safe** for the same reason: eagerly nothing changes, and under
    `torch.compile` the records are not emitted. Elsewhere
    `logger.isEnabledFor(level)` becomes
    `not torch.compiler.is_compiling() and logger.isEnabledFor(level)`
    (parenthesised unless it is an `if`/`while` test or an `and` operand):
    eagerly the value is the same (`not False and x` is `x`), but Dynamo folds
    it to `False`, so whatever it gates stops running in compiled code:
    **unsafe**.
    `getEffectiveLevel()` and `.level` comparisons get advice only: a
    `False` there would read as level 0, which enables everything.
    """

    code = "GM205"
    name = "logger-level-check"
    summary = "`logger.isEnabledFor()` / level reads in compiled code split the graph"
    dynamo_gb = gb_types("GB0291", "GB6215", "GB4841")
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
            fixed=_HEADER + _GUARDED_DEBUG_BLOCK,
        ),
        Example(
            _HEADER + "    verbose = logger.isEnabledFor(logging.INFO)\n    return x, verbose\n",
            fixed=_HEADER + "    verbose = (not torch.compiler.is_compiling() and logger.isEnabledFor(logging.INFO))\n"
            "    return x, verbose\n",
            unsafe=True,
        ),
        Example(_HEADER + "    if logger.getEffectiveLevel() <= logging.DEBUG:\n        x = x + 1\n    return x\n"),
        Example(_HEADER + "    if logger.level == logging.NOTSET:\n        x = x + 1\n    return x\n"),
        Example(_HEADER + "    if logger.handlers and not logger.disabled:\n        x = x + 1\n    return x\n"),
        Example(_HEADER + "    return x * len(logger.handlers)\n"),
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
                    branch = _record_only_branch(finder, node)
                    fix = (
                        guard_statements(ctx.analysis, [branch], Applicability.SAFE)
                        if branch is not None
                        else eager_only_check_fix(ctx.analysis, node)
                    )
                message = f"`{func.attrname}()` on a logger in compiled code causes a graph break"
                yield ctx.report(node, message, traced, fix or NO_FIX)
                continue
            for operand in (node.left, *(right for _, right in node.ops)):
                if not (isinstance(operand, nodes.Attribute) and operand.attrname in LOGGER_FIELDS):
                    continue
                if finder.is_logger(operand.expr):
                    message = f"comparing a logger's `.{operand.attrname}` in compiled code causes a graph break"
                    yield ctx.report(node, message, traced, NO_FIX)
                    break
        for field, traced in ctx.traced_nodes(nodes.Attribute):
            if field.attrname in LOGGER_FIELDS and _truth_or_length(field) and finder.is_logger(field.expr):
                message = f"testing a logger's `.{field.attrname}` in compiled code causes a graph break"
                yield ctx.report(field, message, traced, NO_FIX)


def _truth_or_length(node: nodes.Attribute) -> bool:
    """Python needs *node*'s truth or length: an ``if``/``while``/conditional test (also under ``not`` or
    ``and``/``or``), or ``len(node)``. Only passing the field along (``flag = logger.disabled``) traces."""
    child, parent = node, node.parent
    while isinstance(parent, nodes.BoolOp) or (isinstance(parent, nodes.UnaryOp) and parent.op == "not"):
        child, parent = parent, parent.parent
    if isinstance(parent, (nodes.If, nodes.While, nodes.IfExp)):
        return parent.test is child
    return (
        child is node
        and isinstance(parent, nodes.Call)
        and isinstance(parent.func, nodes.Name)
        and parent.func.name == "len"
        and parent.args == [node]
    )
