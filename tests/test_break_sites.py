"""Findings start on the line Dynamo logs for the break (facts in ``break_site_programs.py``)."""

from __future__ import annotations

import pytest

from graphmend_lint.config import Settings
from graphmend_lint.pipeline import analyze
from graphmend_lint.source import SourceFile
from tests.break_site_programs import PROGRAMS, source


@pytest.mark.parametrize("name", PROGRAMS)
def test_findings_start_where_dynamo_logs_the_break(name: str) -> None:
    text = source(name) + "\ncompiled = torch.compile(f)\n"
    outcome = analyze(SourceFile(text), "program.py", Settings())
    assert {d.start.line for d in outcome.diagnostics} == PROGRAMS[name][1]
