"""Findings start on the line Dynamo logs for the break, and only there.

Facts in ``break_site_programs.py`` (where Dynamo attributes a break) and
``typing_programs.py`` (values whose tensor-ness shows only through their use).
"""

from __future__ import annotations

import pytest

from graphmend_lint.config import Settings
from graphmend_lint.pipeline import analyze
from graphmend_lint.source import SourceFile
from tests import break_site_programs, typing_programs

TABLES = (break_site_programs, typing_programs)
CASES = [(table, name) for table in TABLES for name in table.PROGRAMS]


@pytest.mark.parametrize(("table", "name"), CASES, ids=[name for _, name in CASES])
def test_findings_start_where_dynamo_logs_the_break(table, name: str) -> None:
    text = table.source(name) + "\ncompiled = torch.compile(f)\n"
    outcome = analyze(SourceFile(text), "program.py", Settings())
    assert {d.start.line for d in outcome.diagnostics} == table.PROGRAMS[name][1]
