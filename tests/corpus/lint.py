"""The linter's findings on one program, through the public API, under each scope the corpus scores."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from graphmend_lint import lint_source
from graphmend_lint.analysis.imports import ImportTable, module_name_for
from graphmend_lint.analysis.scope import analyze_scope
from graphmend_lint.config import Settings

#: ``compiled`` is the default a user gets; ``modules`` is the library-author scope.
SCOPES = ("compiled", "modules")

#: The dtype gate a finding's message names, e.g. ``(only in fp16)`` or ``(only in fp16/bf16, only in training)``.
_DTYPE_GATE = re.compile(r"only in ((?:fp16|bf16|fp32|fp64)(?:/(?:fp16|bf16|fp32|fp64))*)\b")
#: The message's dtype words as ``torch.dtype`` names (what the worker records a program ran with).
DTYPE_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64"}


def findings(path: Path) -> dict[str, Any]:
    """``{scope: sorted [(line, code), ...]}`` with default settings apart from the scope.

    ``dtype_gated`` maps each scope to the lines whose every finding says the
    break happens only in some dtypes (``{line: [dtype, ...]}``): the score
    cannot hold such a finding against the linter when the program never ran
    those dtypes.
    """
    source = path.read_text(encoding="utf-8")
    answer: dict[str, Any] = {"dtype_gated": {}}
    for scope in SCOPES:
        diagnostics = lint_source(source, str(path), Settings(scope=scope))
        answer[scope] = sorted({(d.start.line, d.code) for d in diagnostics})
        answer["dtype_gated"][scope] = _dtype_gated_lines([(d.start.line, d.message) for d in diagnostics])
    answer["reached"] = {scope: _reached_spans(source, str(path), scope) for scope in SCOPES}
    return answer


def _reached_spans(source: str, path: str, scope: str) -> list[tuple[int, int]]:
    """``(first, last)`` lines of each function the linter's scope analysis says Dynamo traces.

    A missed break outside every span is a scope miss (the linter never looked
    there); inside one it is a typing or rule miss. The held-out split may show
    that split by cause, never where.
    """
    tree = ast.parse(source)
    module_name, is_package = module_name_for(path)
    facts = analyze_scope(tree, ImportTable.from_tree(tree, module_name, is_package), path, scope, text=source)
    positions = {(function.line, function.col) for function in facts.functions}
    return sorted(
        (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (node.lineno, node.col_offset) in positions
    )


def _dtype_gated_lines(messages: list[tuple[int, str]]) -> dict[int, list[str]]:
    """Lines whose every finding names a dtype gate, with the gated ``torch.dtype`` names."""
    gated: dict[int, set[str]] = {}
    ungated: set[int] = set()
    for line, message in messages:
        match = _DTYPE_GATE.search(message)
        if match is None:
            ungated.add(line)
        else:
            gated.setdefault(line, set()).update(DTYPE_NAMES[word] for word in match.group(1).split("/"))
    return {line: sorted(dtypes) for line, dtypes in gated.items() if line not in ungated}
