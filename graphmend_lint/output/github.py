"""GitHub Actions workflow commands, which GitHub turns into annotations on the diff.

Properties follow the order asked for in the issue (``file``, ``line``,
``col``, ``endLine``, ``endColumn``, ``title``). Columns are only given for a
single-line range: ``@actions/core`` documents that they "cannot be sent when
startLine and endLine are different values".
"""

from __future__ import annotations

from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.output.report import Report, in_cell, one_based


def render(report: Report) -> str:
    """One ``::error ...::CODE message`` line a finding; nothing when there are none."""
    return "".join(f"{_command(diagnostic)}\n" for diagnostic in report.diagnostics)


def _command(diagnostic: Diagnostic) -> str:
    line, column = one_based(diagnostic.start)
    end_line, end_column = one_based(diagnostic.end)
    properties: list[tuple[str, str | int]] = [("file", diagnostic.path), ("line", line)]
    if diagnostic.start.line == diagnostic.end.line:
        properties += [("col", column), ("endLine", end_line), ("endColumn", end_column)]
    else:
        properties.append(("endLine", end_line))
    properties.append(("title", diagnostic.code))
    rendered = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties)
    return f"::error {rendered}::{escape_data(in_cell(diagnostic, f'{diagnostic.code} {diagnostic.message}'))}"


def escape_data(text: str) -> str:
    """Escape a command's message as ``@actions/core`` does, so a newline can't end it early.

    ``%`` goes first: escaping it last would re-escape the ``%`` of ``%0A``.
    """
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value; ``,`` and ``:`` would otherwise end the value or the list."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")
