"""Step a loop through its items directly while Dynamo traces, through the progress bar otherwise.

``for t in tqdm(xs, desc=...)`` breaks the graph: Dynamo skips tqdm's
constructor (GB0007) and each step of its iterator (GB0008). ``for t in (xs
if torch.compiler.is_compiling() else tqdm(xs, desc=...))`` iterates the same
items in the same order: eagerly the condition is ``False`` and the bar runs as
before; Dynamo folds it to ``True`` and never builds the bar (measured on torch
2.13: no logged break, ``fullgraph=True`` passes). ``trange(a, b)`` steps
through ``range(a, b)``.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.lookup import is_builtin_call
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.host_sync import node_text
from graphmend_lint.fixes.torch_name import torch_name_at

#: Builtins that iterate their arguments' items in a loop header.
_ITEM_WRAPPERS = ("enumerate", "zip", "reversed", "list", "tuple")
MESSAGE = "Step through the items directly while compiling (`xs if torch.compiler.is_compiling() else tqdm(xs)`)"


def _items(analysis: FileAnalysis, call: nodes.Call, factory: str) -> str | None:
    """The text of what the bar iterates: ``tqdm``'s first argument, or the ``range`` that ``trange`` wraps."""
    if any(isinstance(arg, nodes.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords or []):
        return None
    if factory == "trange":
        return f"range({', '.join(node_text(analysis, arg) for arg in call.args)})" if call.args else None
    if call.args:
        return node_text(analysis, call.args[0])
    given = [k.value for k in call.keywords or [] if k.arg == "iterable"]
    return node_text(analysis, given[0]) if given else None


def _iterated_by(call: nodes.Call) -> nodes.For | nodes.Comprehension | None:
    """The loop that steps through *call*'s items: it is the loop's iterable, or an argument of the builtins
    around it there (``for i, x in enumerate(tqdm(xs))``, ``zip(tqdm(xs), ys)``)."""
    node: nodes.NodeNG = call
    while isinstance(node.parent, nodes.Call) and node in node.parent.args and _wraps_items(node.parent):
        node = node.parent
    loop = node.parent
    return loop if isinstance(loop, (nodes.For, nodes.Comprehension)) and loop.iter is node else None


def _wraps_items(call: nodes.Call) -> bool:
    return any(is_builtin_call(call, name) for name in _ITEM_WRAPPERS)


def eager_progress_bar_fix(analysis: FileAnalysis, call: nodes.Call, factory: str) -> Fix | None:
    """The rewrite of a progress bar that a ``for`` loop (or a comprehension) iterates, directly or through
    ``enumerate`` / ``zip``; ``None`` elsewhere.

    Unsafe: eager runs are unchanged, but under ``torch.compile`` the bar is not shown.
    """
    loop = _iterated_by(call)
    if loop is None:
        return None
    items = _items(analysis, call, factory)
    torch = torch_name_at(analysis, call)
    if items is None or torch is None:
        return None
    content = f"{items} if {torch.name}.compiler.is_compiling() else {node_text(analysis, call)}"
    if loop.iter is call:
        content = f"({content})"  # a comprehension would read a bare ``if`` as its filter
    return Fix(
        edits=(*torch.edits, Edit(analysis.start_of(call), analysis.end_of(call), content)),
        applicability=Applicability.UNSAFE,
        message=MESSAGE,
    )
