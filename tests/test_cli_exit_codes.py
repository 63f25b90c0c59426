"""Exit codes and the summary in every mode: nothing claims success when a file was not checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CLEAN_PROGRAM, GUARDED_PRINT, PRINT_PROGRAM, run_cli, write

SUCCESS = "All checks passed!"


def broken_inputs(project: Path) -> dict[str, str]:
    """A path of each kind that cannot be checked, and the error naming it."""
    (project / "latin.py").write_bytes(b"x = '\xff\xfe'\n")
    return {"missing.py": "missing.py: No such file or directory", "latin.py": "latin.py: cannot decode"}


@pytest.mark.parametrize("kind", ["missing.py", "latin.py"])
def test_lint_summary_never_claims_success_next_to_an_error(project: Path, kind: str) -> None:
    expected = broken_inputs(project)[kind]
    write(project, "clean.py", CLEAN_PROGRAM)
    result = run_cli("clean.py", kind, "--no-cache", cwd=project)
    assert expected in result.err
    assert SUCCESS not in result.out
    assert result.out.splitlines()[-1] == "1 path could not be checked (see the errors above)."
    assert result.code == 1


@pytest.mark.parametrize("kind", ["missing.py", "latin.py"])
def test_diff_exits_one_when_a_path_cannot_be_checked(project: Path, kind: str) -> None:
    expected = broken_inputs(project)[kind]
    result = run_cli("--diff", kind, cwd=project)
    assert expected in result.err
    assert result.out == "" and result.code == 1


def test_diff_reports_a_syntax_error_and_exits_one(project: Path) -> None:
    write(project, "broken.py", "def f(:\n    pass\n")
    result = run_cli("--diff", "broken.py", cwd=project)
    assert "broken.py:1:7: GM001 SyntaxError: invalid syntax" in result.err
    assert result.code == 1


def test_diff_on_a_clean_file_exits_zero_and_exit_zero_wins(project: Path) -> None:
    write(project, "clean.py", CLEAN_PROGRAM)
    clean = run_cli("--diff", "clean.py", cwd=project)
    assert (clean.code, clean.out, clean.err) == (0, "", "")
    assert run_cli("--diff", "missing.py", "--exit-zero", cwd=project).code == 0


def test_dash_reads_standard_input(project: Path) -> None:
    result = run_cli("-", cwd=project, stdin=PRINT_PROGRAM)
    assert "-:7:5: GM201" in result.out and SUCCESS not in result.out
    assert "No such file" not in result.err
    assert result.code == 1
    named = run_cli("--stdin-filename", "pkg/model.py", "-", cwd=project, stdin=PRINT_PROGRAM)
    assert "pkg/model.py:7:5: GM201" in named.out and named.code == 1


def test_dash_with_other_paths_is_a_usage_error(project: Path) -> None:
    write(project, "clean.py", CLEAN_PROGRAM)
    result = run_cli("-", "clean.py", cwd=project, stdin=PRINT_PROGRAM)
    assert result.code == 2 and "read standard input and take no other paths" in result.err


def test_stdin_fix_prints_the_fixed_source_and_reports_what_remains_on_stderr(project: Path) -> None:
    result = run_cli("--stdin-filename", "s.py", "--fix", cwd=project, stdin=PRINT_PROGRAM)
    assert result.out == PRINT_PROGRAM  # GM201's fix is unsafe: nothing applied, the source comes back
    assert "s.py:7:5: GM201" in result.err
    assert "Found 1 error." in result.err
    assert result.code == 1
    fixed = run_cli("-", "--fix", "--unsafe-fixes", cwd=project, stdin=PRINT_PROGRAM)
    assert GUARDED_PRINT in fixed.out and "GM201" not in fixed.out
    assert "Found 1 error (1 fixed, 0 remaining)." in fixed.err
    assert fixed.code == 0


def test_stdin_diff_exits_one_with_a_diff(project: Path) -> None:
    result = run_cli("-", "--diff", "--unsafe-fixes", cwd=project, stdin=PRINT_PROGRAM)
    assert result.out.startswith("--- a/-\n+++ b/-\n") and result.code == 1
