"""The concise line plus the offending source, underlined, and what can be done.

Laid out like ruff's ``full`` format: a gutter with line numbers, carets under
the exact range, then ``= help:`` (the fix and how safe it is) and, for this
linter, the chain of functions through which ``torch.compile`` reaches the
code, since a finding in a helper is only a graph break because of its caller.
"""

from __future__ import annotations

import unicodedata

from graphmend_lint.diagnostics import Applicability, Diagnostic
from graphmend_lint.output import concise
from graphmend_lint.output.report import Report
from graphmend_lint.source import SourceFile

#: A range longer than this (a whole function, say) shows its first lines only.
MAX_SNIPPET_LINES = 5


def render(report: Report) -> str:
    """Each finding as a block ended by a blank line, then the shared summary."""
    if report.statistics:
        return concise.render(report)
    files = {path: SourceFile(text) for path, text in report.sources.items()}
    cells = {key: SourceFile(text) for key, text in report.cell_sources.items()}
    lines: list[str] = []
    for diagnostic in report.diagnostics:
        lines.append(concise.diagnostic_line(report, diagnostic))
        if diagnostic.cell is not None:
            source = cells.get((diagnostic.path, diagnostic.cell))
        else:
            source = files.get(diagnostic.path)
        if source is not None:
            lines.extend(_snippet(source, diagnostic))
        lines.extend(_notes(diagnostic))
        lines.append("")
    return concise.join_lines([*lines, *concise.trailer_lines(report)])


def _snippet(source: SourceFile, diagnostic: Diagnostic) -> list[str]:
    """The lines of the range in a numbered gutter, each underlined with carets.

    Returns nothing when the range lies outside the text (a stale source), as
    a wrong snippet would be worse than none.
    """
    first = diagnostic.start.line
    if not 1 <= first <= len(source.lines):
        return []
    last = min(diagnostic.end.line, len(source.lines))
    if last > first and diagnostic.end.col == 0:
        last -= 1  # the range stops at the line break before `end`
    last = max(last, first)
    shown = range(first, min(last, first + MAX_SNIPPET_LINES - 1) + 1)
    width = len(str(shown[-1]))
    gutter = " " * width
    lines = [f"{gutter} |"]
    for number in shown:
        text = source.line(number)
        lines.append(f"{number:>{width}} | {text}".rstrip())
        underline = _underline(text, number, diagnostic)
        if underline:
            lines.append(f"{gutter} | {underline}")
    if shown[-1] < last:
        lines.append(f"{gutter} | ... ({last - shown[-1]} more lines)")
    lines.append(f"{gutter} |")
    return lines


def _underline(text: str, number: int, diagnostic: Diagnostic) -> str:
    """Carets under the part of line *number* that the range covers.

    Lines inside a multi-line range are underlined from their first
    non-blank character, so indentation isn't mistaken for the finding.
    A zero-width range (an insertion point) still gets one caret.
    """
    start, end = diagnostic.start, diagnostic.end
    begin = start.col if number == start.line else len(text) - len(text.lstrip())
    finish = end.col if number == end.line else len(text)
    begin = min(max(begin, 0), len(text))
    finish = min(max(finish, begin), len(text))
    if finish == begin and number != start.line:
        return ""
    padding = "".join("\t" if char == "\t" else " " * _width(char) for char in text[:begin])
    carets = "^" * max(sum(_width(char) for char in text[begin:finish]), 1)
    return padding + carets


def _width(char: str) -> int:
    """Terminal cells one character takes, so carets line up under wide or combining text."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


#: What follows a fix's message in ``= help:``; a fix without edits is only advice and gets nothing.
FIX_KIND = {
    Applicability.SAFE: "safe fix",
    Applicability.UNSAFE: "unsafe fix",
    Applicability.DISPLAY_ONLY: "suggestion, never applied",
}


def _notes(diagnostic: Diagnostic) -> list[str]:
    """``= help:`` with the fix's safety, and ``= in compile scope:`` when known."""
    notes = []
    fix = diagnostic.fix
    if fix is not None:
        kind = f" ({FIX_KIND[fix.applicability]})" if fix.edits else ""
        notes.append(f"  = help: {fix.message}{kind}")
    if diagnostic.scope_chain:
        notes.append(f"  = in compile scope: {' -> '.join(diagnostic.scope_chain)}")
    return notes
