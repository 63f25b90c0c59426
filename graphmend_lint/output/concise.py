"""The default text format: one ``path:line:col: CODE [*] message`` line a finding.

The layout and every sentence of the summary copy ruff's, because that is what
users (and the scripts they already wrote around ruff) expect. The header
line, the fix listing and the summary are also used by :mod:`.full`.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.output.report import Report, one_based

FIXABLE_MARKER = "[*]"


def render(report: Report) -> str:
    """Findings (or, with ``statistics``, a count per rule), then the summary."""
    if report.statistics:
        body = statistics_lines(report)
    else:
        body = [diagnostic_line(report, diagnostic) for diagnostic in report.diagnostics]
    return join_lines([*body, *trailer_lines(report)])


def join_lines(lines: Sequence[str]) -> str:
    """Terminate every line, so an empty report prints nothing at all."""
    return "".join(f"{line}\n" for line in lines)


def diagnostic_line(report: Report, diagnostic: Diagnostic) -> str:
    """``path:line:col: CODE [*] message``, with ruff's 1-based column.

    A notebook finding reads ``nb.ipynb:cell 3:2:5: ...``, ruff's layout, since
    its line is relative to the cell.

    The marker sits after the code, where ruff puts it, and only when
    ``--fix`` would really apply the fix under this run's settings.
    """
    line, column = one_based(diagnostic.start)
    marker = f" {FIXABLE_MARKER}" if report.is_fixable(diagnostic) else ""
    cell = f"cell {diagnostic.cell}:" if diagnostic.cell is not None else ""
    return f"{diagnostic.path}:{cell}{line}:{column}: {diagnostic.code}{marker} {diagnostic.message}"


def trailer_lines(report: Report) -> list[str]:
    """What follows the findings: the ``--show-fixes`` listing, then the summary.

    The listing is set off by blank lines as ruff does, so it reads as a
    block of its own between the findings and the counts.
    """
    listing = fix_listing(report)
    summary = summary_lines(report)
    lines = ["", *listing] if listing else []
    if listing and summary:
        lines.append("")
    return [*lines, *summary]


def fix_listing(report: Report) -> list[str]:
    """``Fixed N errors:`` and, per file, ``- CODE message`` for each applied fix."""
    if not report.show_fixes or not report.applied:
        return []
    lines = [f"Fixed {_count(len(report.applied), 'error', 'errors')}:"]
    path = None
    for diagnostic in report.applied:  # sorted by path, so each file is one run
        if diagnostic.path != path:
            path = diagnostic.path
            lines.append(f"{path}:")
        lines.append(f"  - {diagnostic.code} {diagnostic.message}")
    return lines


def summary_lines(report: Report) -> list[str]:
    """ruff's closing sentences: the error count, then what ``--fix`` could still do.

    Hidden unsafe fixes are only advertised while ``--unsafe-fixes`` is off;
    with it on they are already counted as fixable.
    """
    if report.quiet:
        return []
    remaining = len(report.diagnostics)
    lines = []
    if report.fixed_count:
        total = report.fixed_count + remaining
        lines.append(f"Found {_count(total, 'error', 'errors')} ({report.fixed_count} fixed, {remaining} remaining).")
    elif remaining:
        lines.append(f"Found {_count(remaining, 'error', 'errors')}.")
    elif not (report.unchecked or report.unfixed):
        lines.append("All checks passed!")
    fixable = report.fixable_count
    hidden = 0 if report.unsafe_fixes else report.hidden_unsafe_fixes
    hint = f"{_count(hidden, 'hidden fix', 'hidden fixes')} can be enabled with the `--unsafe-fixes` option"
    if fixable and hidden:
        lines.append(f"{FIXABLE_MARKER} {fixable} fixable with the `--fix` option ({hint}).")
    elif fixable:
        lines.append(f"{FIXABLE_MARKER} {fixable} fixable with the `--fix` option.")
    elif hidden:
        lines.append(f"No fixes available ({hint}).")
    return [*lines, *_file_problem_lines(report)]


def _file_problem_lines(report: Report) -> list[str]:
    """What was not checked, not fixed or skipped; the messages themselves went to stderr."""
    lines = []
    if report.unchecked:
        lines.append(f"{_count(report.unchecked, 'path', 'paths')} could not be checked (see the errors above).")
    if report.unfixed:
        lines.append(f"{_count(report.unfixed, 'file was', 'files were')} not fixed (see the errors above).")
    if report.skipped:
        lines.append(f"{_count(report.skipped, 'file', 'files')} skipped (see the notes above).")
    return lines


def statistics_lines(report: Report) -> list[str]:
    """ruff's ``--statistics`` table: count, code, fixable marker and rule name.

    Rows are ordered by count, most frequent first, then by code so equal
    counts come out in a stable order. The marker column only appears when
    some rule is fixable, as in ruff (and flake8 before it).
    """
    by_code: dict[str, list[Diagnostic]] = {}
    for diagnostic in report.diagnostics:
        by_code.setdefault(diagnostic.code, []).append(diagnostic)
    if not by_code:
        return []
    rows = sorted(by_code.items(), key=lambda item: (-len(item[1]), item[0]))
    count_width = len(str(len(rows[0][1])))
    code_width = max(len(code) for code in by_code)
    show_marker = report.fixable_count > 0
    lines = []
    for code, diagnostics in rows:
        marker = ""
        if show_marker:
            fixable = any(report.is_fixable(diagnostic) for diagnostic in diagnostics)
            marker = f"{FIXABLE_MARKER} " if fixable else "[ ] "
        name = report.rule_names.get(code, "")
        lines.append(f"{len(diagnostics):>{count_width}}\t{code:<{code_width}}\t{marker}{name}")
    return lines


def _count(number: int, singular: str, plural: str) -> str:
    return f"{number} {singular if number == 1 else plural}"
