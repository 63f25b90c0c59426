"""ruff's JSON rows, so tools that already parse ``ruff --output-format json`` work.

``cell`` is the notebook cell a finding's rows are relative to (null for a
plain file), as in ruff. The only addition is ``scope_chain``: the functions through which
``torch.compile`` reaches the finding, which ruff has no notion of.
"""

from __future__ import annotations

import json
from typing import Any

from graphmend_lint.diagnostics import Diagnostic, Fix, Position
from graphmend_lint.output.report import Report, one_based


def render(report: Report) -> str:
    """A JSON array (indent 2), one object a finding; ``[]`` when there are none.

    Non-ASCII text is written as is (not ``\\u`` escaped), as ruff does.
    """
    rows = [_row(report, diagnostic) for diagnostic in report.diagnostics]
    return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"


def _row(report: Report, diagnostic: Diagnostic) -> dict[str, Any]:
    # Keys in ruff's (alphabetical) order, `scope_chain` included, so a diff
    # against ruff's output lines up.
    noqa_row = diagnostic.noqa_line if diagnostic.noqa_line is not None else diagnostic.start.line
    return {
        "cell": diagnostic.cell,
        "code": diagnostic.code,
        "end_location": _location(diagnostic.end),
        "filename": diagnostic.path,
        "fix": _fix(diagnostic.fix),
        "location": _location(diagnostic.start),
        "message": diagnostic.message,
        "noqa_row": noqa_row,
        "scope_chain": list(diagnostic.scope_chain),
        "url": report.rule_urls.get(diagnostic.code),
    }


def _fix(fix: Fix | None) -> dict[str, Any] | None:
    if fix is None:
        return None
    return {
        "applicability": fix.applicability.value,
        "edits": [
            {"content": edit.content, "end_location": _location(edit.end), "location": _location(edit.start)}
            for edit in fix.edits
        ],
        "message": fix.message,
    }


def _location(position: Position) -> dict[str, int]:
    row, column = one_based(position)
    return {"column": column, "row": row}
