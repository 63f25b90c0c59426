"""Answer ``logger.isEnabledFor(level)`` with ``False`` while Dynamo traces.

``not torch.compiler.is_compiling() and logger.isEnabledFor(level)`` has the
value of ``logger.isEnabledFor(level)`` whenever the code runs eagerly
(``not False and x`` is ``x``), and Dynamo constant-folds it to ``False``
while tracing, so the level check, and whatever it gates, never reaches the
graph.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.host_sync import node_text
from graphmend_lint.fixes.torch_name import torch_name_at


def _needs_parentheses(call: nodes.Call) -> bool:
    """Whether ``not c() and call`` must be parenthesised to replace *call* where it stands."""
    parent = call.parent
    if isinstance(parent, (nodes.If, nodes.While, nodes.IfExp)) and parent.test is call:
        return False
    return not (isinstance(parent, nodes.BoolOp) and parent.op == "and")


def eager_only_check_fix(analysis: FileAnalysis, call: nodes.Call) -> Fix | None:
    """``logger.isEnabledFor(L)`` → ``not torch.compiler.is_compiling() and logger.isEnabledFor(L)``.

    Unsafe: eagerly the value is unchanged, but under ``torch.compile`` the
    check is ``False``, so whatever it gates no longer runs in compiled code.
    (A check that only gates log records gets GM202's safe guard instead.)
    """
    torch = torch_name_at(analysis, call)
    if torch is None:
        return None
    guarded = f"not {torch.name}.compiler.is_compiling() and {node_text(analysis, call)}"
    content = f"({guarded})" if _needs_parentheses(call) else guarded
    return Fix(
        edits=(*torch.edits, Edit(analysis.start_of(call), analysis.end_of(call), content)),
        applicability=Applicability.UNSAFE,
        message="Check the level only when not compiling (`not torch.compiler.is_compiling() and ...`)",
    )
