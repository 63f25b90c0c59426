"""Cutting a whole statement out of the source: only one that owns its lines, and then all of them.

A rewrite that removes a statement (the expert-dispatch rewrite's ``expert_hit``
line, the NumPy-plan op's ``torch.tensor(mask, ...)`` conversion) deletes its
lines whole, so no indentation or empty line is left behind; that is only
right when nothing else shares those lines.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Edit, Position


def indentation_of(analysis: FileAnalysis, statement: nodes.NodeNG) -> str:
    """The text of *statement*'s first line before it (its indentation, when it starts the line)."""
    start = analysis.start_of(statement)
    return analysis.source.lines[start.line - 1][: start.col]


def owns_its_lines(analysis: FileAnalysis, statement: nodes.NodeNG) -> bool:
    """Nothing but indentation before *statement* and nothing but a comment after it on its lines."""
    end = analysis.end_of(statement)
    after = analysis.source.lines[end.line - 1][end.col :].strip()
    return not indentation_of(analysis, statement).strip() and (not after or after.startswith("#"))


def delete_lines(statement: nodes.NodeNG) -> Edit:
    """Remove the whole lines of *statement* (it owns them: :func:`owns_its_lines`)."""
    end_line = statement.end_lineno or statement.lineno
    return Edit(Position(statement.lineno, 0), Position(end_line + 1, 0), "")
