"""End-to-end tests of the command line, through a real subprocess."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from conftest import CLEAN_PROGRAM, GUARDED_PRINT, PRINT_PROGRAM, run_cli, write


def test_clean_project_exits_zero(project: Path) -> None:
    write(project, "clean.py", CLEAN_PROGRAM)
    result = run_cli("clean.py", cwd=project)
    assert result.code == 0, result.err
    assert "All checks passed!" in result.out


def test_findings_exit_one_with_sorted_concise_lines(project: Path) -> None:
    write(project, "b.py", PRINT_PROGRAM)
    write(project, "a.py", PRINT_PROGRAM + "\n\n@torch.compile\ndef g(x):\n    print(x)\n    return x * 2\n")
    result = run_cli(".", "--no-cache", cwd=project)
    assert result.code == 1, result.err
    lines = [line for line in result.out.splitlines() if ": GM" in line]
    assert lines == [
        'a.py:7:5: GM201 `print()` in compiled code causes a graph break',
        'a.py:13:5: GM201 `print()` in compiled code causes a graph break',
        'b.py:7:5: GM201 `print()` in compiled code causes a graph break',
    ]
    assert "3 hidden fixes can be enabled with the `--unsafe-fixes` option" in result.out


def test_unsafe_fixes_mark_findings_fixable(project: Path) -> None:
    write(project, "a.py", PRINT_PROGRAM)
    result = run_cli("a.py", "--unsafe-fixes", cwd=project)
    assert "a.py:7:5: GM201 [*] `print()` in compiled code causes a graph break" in result.out


def test_exit_zero(project: Path) -> None:
    write(project, "a.py", PRINT_PROGRAM)
    assert run_cli("a.py", "--exit-zero", cwd=project).code == 0


def test_usage_error_exits_two(project: Path) -> None:
    result = run_cli("--no-such-flag", cwd=project)
    assert result.code == 2
    assert "unrecognized arguments" in result.err


def test_config_unknown_key_exits_two_naming_file_and_key(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphmend-lint]\nselekt = ["GM"]\n')
    write(project, "a.py", PRINT_PROGRAM)
    result = run_cli("a.py", cwd=project)
    assert result.code == 2
    assert "pyproject.toml" in result.err and "unknown key `selekt`" in result.err


def test_config_wrong_type_exits_two(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphmend-lint]\nscope = "everything"\n')
    result = run_cli(".", cwd=project)
    assert result.code == 2
    assert "`scope`: expected one of 'compiled', 'modules', 'all'" in result.err


def test_config_select_and_cli_override(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphmend-lint]\nignore = ["GM201"]\n')
    write(project, "a.py", PRINT_PROGRAM)
    assert run_cli("a.py", cwd=project).code == 0
    assert run_cli("a.py", "--select", "GM2", "--ignore", "GM1", cwd=project).code == 1


def test_per_file_ignores(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphmend-lint.per-file-ignores]\n"scripts/*" = ["GM201"]\n')
    write(project, "scripts/a.py", PRINT_PROGRAM)
    write(project, "src/a.py", PRINT_PROGRAM)
    result = run_cli(".", "--no-cache", cwd=project)
    assert "src/a.py:7:5" in result.out and "scripts/a.py" not in result.out


def test_noqa_forms(project: Path) -> None:
    write(
        project,
        "a.py",
        """
        import torch

        @torch.compile
        def f(x):
            print(x)  # noqa: GM201
            print(x)  # NOQA:gm999, GM201
            print(x)  # noqa
            print(x)  # noqa: GM101
            print("# noqa")
            return x * 2
        """,
    )
    result = run_cli("a.py", "--no-cache", cwd=project)
    flagged = [line.split(":")[1] for line in result.out.splitlines() if "GM201" in line]
    assert flagged == ["8", "9"]


def test_file_level_noqa(project: Path) -> None:
    write(project, "a.py", "# graphmend-lint: noqa\n" + PRINT_PROGRAM)
    assert run_cli("a.py", cwd=project).code == 0


def test_json_output_matches_ruff_layout(project: Path) -> None:
    write(project, "a.py", PRINT_PROGRAM)
    result = run_cli("a.py", "--output-format", "json", "--unsafe-fixes", cwd=project)
    rows = json.loads(result.out)
    assert len(rows) == 1
    row = rows[0]
    assert set(row) >= {"code", "message", "filename", "location", "end_location", "fix", "noqa_row", "url"}
    assert row["code"] == "GM201"
    assert row["location"] == {"row": 7, "column": 5}
    assert row["end_location"] == {"row": 7, "column": 24}
    assert row["noqa_row"] == 7
    assert row["fix"]["applicability"] == "unsafe"
    edit = row["fix"]["edits"][0]
    assert edit["location"] == {"row": 7, "column": 5} and edit["content"] == GUARDED_PRINT.rstrip("\n")
    assert row["scope_chain"][-1] == "step"


def test_github_output(project: Path) -> None:
    write(project, "a.py", PRINT_PROGRAM)
    result = run_cli("a.py", "--output-format", "github", cwd=project)
    assert result.out.startswith("::error file=a.py,line=7,col=5,endLine=7,endColumn=24,title=GM201::GM201 ")


def test_sarif_output_is_parseable(project: Path) -> None:
    write(project, "a.py", PRINT_PROGRAM)
    result = run_cli("a.py", "--output-format", "sarif", cwd=project)
    sarif = json.loads(result.out)
    assert sarif["version"] == "2.1.0"
    assert sarif["runs"][0]["results"][0]["ruleId"] == "GM201"


def test_full_output_shows_source_and_scope_chain(project: Path) -> None:
    write(project, "a.py", PRINT_PROGRAM)
    result = run_cli("a.py", "--output-format", "full", cwd=project)
    assert 'print("y:", y.data)' in result.out
    assert "@torch.compile -> step" in result.out


def test_statistics(project: Path) -> None:
    write(project, "a.py", PRINT_PROGRAM)
    result = run_cli("a.py", "--statistics", cwd=project)
    assert "GM201" in result.out and "print-in-compiled-scope" in result.out


def test_diff_writes_nothing(project: Path) -> None:
    path = write(project, "a.py", PRINT_PROGRAM)
    before = path.read_bytes()
    result = run_cli("a.py", "--diff", "--unsafe-fixes", cwd=project)
    assert result.code == 1
    assert "+    if not torch.compiler.is_compiling():" in result.out
    assert result.out.startswith("--- a/a.py")
    assert path.read_bytes() == before


def test_fix_writes_and_second_fix_changes_nothing(project: Path) -> None:
    path = write(project, "a.py", PRINT_PROGRAM)
    first = run_cli("a.py", "--fix", "--unsafe-fixes", cwd=project)
    assert first.code == 0, first.out + first.err
    fixed = path.read_text()
    assert "    " + GUARDED_PRINT + "    return y.relu()\n" in fixed
    second = run_cli("a.py", "--fix", "--unsafe-fixes", "--no-cache", cwd=project)
    assert second.code == 0
    assert path.read_text() == fixed


def test_safe_fix_only_leaves_unsafe_fix_alone(project: Path) -> None:
    path = write(project, "a.py", PRINT_PROGRAM)
    before = path.read_bytes()
    result = run_cli("a.py", "--fix", cwd=project)
    assert result.code == 1
    assert path.read_bytes() == before


def test_fix_keeps_encoding_bom_newlines_and_permissions(project: Path) -> None:
    text = "# -*- coding: latin-1 -*-\n" + PRINT_PROGRAM.replace('"y:"', '"é:"')
    path = project / "legacy.py"
    path.write_bytes(b"\xef\xbb\xbf" * 0 + text.replace("\n", "\r\n").encode("latin-1"))
    path.chmod(0o754)
    result = run_cli("legacy.py", "--fix", "--unsafe-fixes", cwd=project)
    assert result.code == 0, result.err
    data = path.read_bytes()
    assert b"\r\n    if not torch.compiler.is_compiling():\r\n        print(\"\xe9:\"" in data
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert stat.S_IMODE(path.stat().st_mode) == 0o754
    bom = project / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + PRINT_PROGRAM.lstrip().encode())
    run_cli("bom.py", "--fix", "--unsafe-fixes", cwd=project)
    assert bom.read_bytes().startswith(b"\xef\xbb\xbfimport torch") and b"is_compiling" in bom.read_bytes()


def test_suppressed_line_is_never_fixed(project: Path) -> None:
    path = write(project, "a.py", PRINT_PROGRAM.replace('print("y:", y.data)', 'print("y:", y.data)  # noqa: GM201'))
    before = path.read_text()
    run_cli("a.py", "--fix", "--unsafe-fixes", cwd=project)
    assert path.read_text() == before


def test_stdin(project: Path) -> None:
    result = run_cli("--stdin-filename", "snippet.py", cwd=project, stdin=PRINT_PROGRAM.lstrip())
    assert result.code == 1
    assert "snippet.py:7:5: GM201" in result.out


def test_stdin_fix_prints_fixed_source(project: Path) -> None:
    result = run_cli("--stdin-filename", "s.py", "--fix", "--unsafe-fixes", cwd=project, stdin=PRINT_PROGRAM)
    assert GUARDED_PRINT in result.out
    assert result.code == 0


def test_syntax_error_is_gm001_and_other_files_still_linted(project: Path) -> None:
    write(project, "broken.py", "import torch\n\ndef f(x)\n    return x\n")
    write(project, "a.py", PRINT_PROGRAM)
    result = run_cli(".", "--no-cache", cwd=project)
    assert result.code == 1
    assert "broken.py:3:9: GM001 SyntaxError:" in result.out
    assert "a.py:7:5: GM201" in result.out
    assert "Traceback" not in result.err


def test_a_syntax_error_shows_whatever_rules_are_selected_unless_gm001_is_ignored(project: Path) -> None:
    write(project, "broken.py", "import torch\n\ndef f(x)\n    return x\n")
    selected = run_cli(".", "--no-cache", "--select", "GM401", cwd=project)
    assert selected.code == 1
    assert "broken.py:3:9: GM001 SyntaxError:" in selected.out
    assert "All checks passed" not in selected.out
    ignored = run_cli(".", "--no-cache", "--ignore", "GM001", cwd=project)
    assert ignored.code == 0
    assert "GM001" not in ignored.out


def test_undecodable_missing_and_unreadable_paths(project: Path) -> None:
    (project / "bad.py").write_bytes(b"import torch\nx = '\xff\xfe'\n")
    os.symlink(project / "nowhere.py", project / "dangling.py")
    write(project, "a.py", PRINT_PROGRAM)
    result = run_cli(".", "missing_dir", "--no-cache", cwd=project)
    assert result.code == 1
    assert "bad.py: cannot decode" in result.err
    assert "dangling.py: cannot read" in result.err
    assert "missing_dir: No such file or directory" in result.err
    assert "a.py:7:5: GM201" in result.out
    assert "Traceback" not in result.err


def test_binary_file_skipped_with_note(project: Path) -> None:
    (project / "blob.py").write_bytes(b"\x00\x01\x02torch")
    result = run_cli("blob.py", cwd=project)
    assert result.code == 0
    assert "blob.py: skipped, looks binary" in result.err


def test_exclude_and_force_exclude(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphmend-lint]\nextend-exclude = ["generated"]\n')
    write(project, "generated/a.py", PRINT_PROGRAM)
    assert run_cli(".", cwd=project).code == 0
    assert run_cli("generated/a.py", cwd=project).code == 1
    assert run_cli("generated/a.py", "--force-exclude", cwd=project).code == 0


def test_rules_and_rule_commands(project: Path) -> None:
    listing = run_cli("rules", cwd=project)
    assert listing.code == 0
    assert "GM201" in listing.out and "print-in-compiled-scope" in listing.out and "GB0059" in listing.out
    doc = run_cli("rule", "GM201", cwd=project)
    assert doc.code == 0 and "## What it does" in doc.out and "## Fix safety" in doc.out
    assert run_cli("rule", "GM999", cwd=project).code == 2


def test_cache_gives_same_output(project: Path) -> None:
    write(project, "a.py", PRINT_PROGRAM)
    cold = run_cli(".", cwd=project)
    assert (project / ".graphmend_cache").is_dir()
    warm = run_cli(".", cwd=project)
    assert cold.out == warm.out and cold.code == warm.code == 1
