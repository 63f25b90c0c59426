"""The linter's analysis of a source text, and what its value oracle says, for the typing tests.

``probe(...)`` is a name the tests call on the expressions they ask about; it is never defined.
"""

from __future__ import annotations

import ast

from astroid import nodes

from graphmend_lint.analysis.imports import ImportTable
from graphmend_lint.analysis.scope import analyze_scope
from graphmend_lint.analysis.values import Kind
from graphmend_lint.config import Settings
from graphmend_lint.context import FileAnalysis
from graphmend_lint.pipeline import _file_analysis
from graphmend_lint.source import SourceFile


def file_analysis(source: str, module: str = "typing_case") -> FileAnalysis:
    """What the pipeline knows about *source* as the file ``<module>.py``, default settings."""
    tree = ast.parse(source)
    imports = ImportTable.from_tree(tree, module)
    scope = analyze_scope(tree, imports, f"{module}.py")
    return _file_analysis(tree, SourceFile(source), f"{module}.py", module, False, imports, scope, Settings())


def kinds_of(source: str, module: str = "typing_case") -> dict[str, Kind]:
    """The kind of every argument of ``probe(...)`` calls in *source*, keyed by its text."""
    analysis = file_analysis(source, module)
    return {
        argument.as_string(): analysis.values.kind(argument)
        for call in analysis.module.nodes_of_class(nodes.Call)
        if isinstance(call.func, nodes.Name) and call.func.name == "probe"
        for argument in call.args
    }
