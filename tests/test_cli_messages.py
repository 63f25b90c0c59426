"""Selectors, options and messages that a newcomer mistypes: each is an error (exit 2) that says what was meant."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PRINT_PROGRAM, run_cli, write

NO_RULE = "matches no rule"


@pytest.mark.parametrize(
    ("flag", "value", "hint"),
    [
        ("--select", "GMNOPE", ""),
        ("--select", "GM9", ""),
        ("--ignore", "NOPE", ""),
        ("--extend-select", "GM2O1", "(did you mean `GM201`?)"),
        ("--select", "GM201,GM2O2", "(did you mean `GM202`?)"),
    ],
)
def test_a_selector_that_matches_no_rule_is_a_usage_error(project: Path, flag: str, value: str, hint: str) -> None:
    write(project, "a.py", PRINT_PROGRAM)
    result = run_cli(flag, value, "a.py", cwd=project)
    assert result.code == 2, result.out + result.err
    assert f"error: {flag}: `" in result.err and NO_RULE in result.err and hint in result.err
    assert "All checks passed" not in result.out


def test_prefixes_full_codes_and_all_still_select(project: Path) -> None:
    write(project, "a.py", PRINT_PROGRAM)
    for selector in ("GM", "GM2", "GM20", "GM201", "ALL", "gm201"):
        assert run_cli("--select", selector, "a.py", cwd=project).code == 1, selector


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('[tool.graphmend-lint]\nselect = ["NOPE"]\n', "`select`: `NOPE` matches no rule"),
        ('[tool.graphmend-lint]\nignore = ["GM2O1"]\n', "`ignore`: `GM2O1` matches no rule (did you mean `GM201`?)"),
        ('[tool.graphmend-lint.per-file-ignores]\n"x/*" = ["GM2X"]\n', "`per-file-ignores`: `GM2X` matches no rule"),
        ('[tool.graphmend-lint]\nselct = ["GM"]\n', "unknown key `selct` (did you mean `select`?)"),
        ('[tool.graphmend-lint]\nextend_select = ["GM"]\n', "unknown key `extend_select` (keys use dashes"),
        ('[tool.graphmend-lint.rules.GM2020]\n', "rules.GM2020: unknown rule (did you mean `GM202`?)"),
        (
            '[tool.graphmend-lint.rules.GM202]\nlogger-name = ["log"]\n',
            "rules.GM202.logger-name: unknown option (did you mean `logger-names`?)",
        ),
        (
            '[tool.graphmend-lint.rules.GM202]\nlogger-names = "log"\n',
            "rules.GM202.logger-names: expected a list of strings, got 'log'",
        ),
        ('[tool.graphmend-lint.verify]\ntarget = ["x.py::f"]\n', "verify.target: unknown key (did you mean `targets`?)"),
    ],
)
def test_config_errors_say_what_was_meant_in_plain_words(project: Path, table: str, expected: str) -> None:
    (project / "pyproject.toml").write_text(table)
    write(project, "a.py", PRINT_PROGRAM)
    result = run_cli("a.py", cwd=project)
    assert result.code == 2, result.out + result.err
    assert "pyproject.toml" in result.err and expected in result.err
    for internal in ("tuple", "NoneType", "Traceback"):
        assert internal not in result.err


@pytest.mark.parametrize("jobs", ["-3", "0", "two"])
def test_jobs_must_be_a_positive_whole_number(project: Path, jobs: str) -> None:
    write(project, "a.py", PRINT_PROGRAM)
    result = run_cli("-j", jobs, "a.py", cwd=project)
    assert result.code == 2
    assert "argument --jobs/-j" in result.err


def test_advice_without_edits_is_not_called_a_display_only_fix(project: Path) -> None:
    write(
        project,
        "a.py",
        """
        import torch

        @torch.compile
        def f(x):
            n = int(x.sum().item())
            return torch.zeros(n)
        """,
    )
    result = run_cli("--output-format", "full", "a.py", cwd=project)
    assert result.code == 1 and "= help:" in result.out
    assert "display-only fix" not in result.out
