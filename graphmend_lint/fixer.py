"""Apply the edits of many fixes to one text in a single pass.

Fixes are all-or-nothing: when one fix's edits overlap an edit already taken,
the whole fix waits for the next round (the engine re-lints and tries again),
as ruff and Fixit do.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphmend_lint.diagnostics import Diagnostic, Edit
from graphmend_lint.source import SourceFile, normalize_newlines


def _span(source: SourceFile, edit: Edit) -> tuple[int, int]:
    return source.offset(edit.start), source.offset(edit.end)


def _overlaps(span: tuple[int, int], taken: Sequence[tuple[int, int]]) -> bool:
    start, end = span
    for other_start, other_end in taken:
        if start < other_end and other_start < end:
            return True
        if start == end == other_start or other_start == other_end == start:
            return True  # two insertions at one point: their order would be arbitrary
    return False


def apply_fixes(source: SourceFile, diagnostics: Sequence[Diagnostic]) -> tuple[str, list[Diagnostic]]:
    """Return the new text and the diagnostics whose fixes were applied."""
    taken: list[tuple[int, int, str]] = []
    applied: list[Diagnostic] = []
    for diagnostic in sorted(diagnostics, key=lambda d: d.sort_key):
        if diagnostic.fix is None:
            continue
        spans = [(*_span(source, edit), edit.content) for edit in diagnostic.fix.edits]
        if spans and all(span in taken for span in spans):
            applied.append(diagnostic)  # the very edits of a fix already taken: one fix shared by findings
            continue
        if any(_overlaps((start, end), [(s, e) for s, e, _ in taken]) for start, end, _ in spans):
            continue
        taken.extend(spans)
        applied.append(diagnostic)
    return _spliced(source, taken), applied


def edited_text(source: SourceFile, edits: Sequence[Edit]) -> str:
    """The text once *edits* (of one fix, so not overlapping) are made: what a fix proving itself by trial lints."""
    return _spliced(source, [(*_span(source, edit), edit.content) for edit in edits])


def _spliced(source: SourceFile, spans: Sequence[tuple[int, int, str]]) -> str:
    text = source.text
    for start, end, content in sorted(spans, key=lambda item: (item[0], item[1]), reverse=True):
        text = text[:start] + normalize_newlines(content, source.newline) + text[end:]
    return text
