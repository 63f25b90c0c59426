"""Adopting the linter on existing code, through the real CLI: ``--add-noqa``, ``--write-baseline``, ``--baseline``."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from conftest import PRINT_PROGRAM, run_cli, write

from graphmend_lint.docs_cli_guide import ADDED_LATER, ADOPTION_GUIDE
from graphmend_lint.docs_examples import example_files

#: Three findings: a print, a print whose line already has a flake8 noqa, and a print split over lines.
LEGACY = """import torch


@torch.compile
def step(x):
    y = x * 2
    print("y:", y.data)   
    print("a very long line", y.data)  # noqa: E501
    print(  # keep me
        "z:", y.data)
    return y.relu()
"""
LEGACY_WITH_NOQA = """import torch


@torch.compile
def step(x):
    y = x * 2
    print("y:", y.data)  # noqa: GM201
    print("a very long line", y.data)  # noqa: E501, GM201
    print(  # keep me  # noqa: GM201
        "z:", y.data)
    return y.relu()
"""


def test_add_noqa_suppresses_every_finding_and_keeps_the_rest_of_the_file(project: Path) -> None:
    path = write(project, "model.py", LEGACY)
    before = run_cli("model.py", cwd=project)
    assert before.code == 1 and before.out.count("GM201") == 3, before.out

    added = run_cli("--add-noqa", "model.py", cwd=project)

    assert added.code == 0, added.err
    assert "Added 3 noqa directives." in added.err
    assert path.read_text() == LEGACY_WITH_NOQA
    after = run_cli("model.py", cwd=project)
    assert after.code == 0 and "All checks passed!" in after.out, after.out


def test_a_second_add_noqa_changes_nothing(project: Path) -> None:
    path = write(project, "model.py", LEGACY)
    assert run_cli("--add-noqa", "model.py", cwd=project).code == 0
    first = path.read_bytes()
    mtime = path.stat().st_mtime_ns

    again = run_cli("--add-noqa", "model.py", cwd=project)

    assert again.code == 0 and "Added 0 noqa directives." in again.err
    assert path.read_bytes() == first and path.stat().st_mtime_ns == mtime


def test_add_noqa_keeps_crlf_line_endings(project: Path) -> None:
    path = project / "model.py"
    path.write_bytes(PRINT_PROGRAM.replace("\n", "\r\n").encode())

    assert run_cli("--add-noqa", "model.py", cwd=project).code == 0

    data = path.read_bytes()
    assert b'print("y:", y.data)  # noqa: GM201\r\n' in data
    assert data.count(b"\n") == data.count(b"\r\n") == PRINT_PROGRAM.count("\n")
    assert run_cli("model.py", cwd=project).code == 0


def test_add_noqa_keeps_a_declared_encoding(project: Path) -> None:
    path = project / "model.py"
    text = "# -*- coding: latin-1 -*-\n" + PRINT_PROGRAM.replace('"y:"', '"é:"')
    path.write_bytes(text.encode("latin-1"))

    assert run_cli("--add-noqa", "model.py", cwd=project).code == 0

    assert path.read_bytes() == text.replace('y.data)\n', 'y.data)  # noqa: GM201\n').encode("latin-1")


def test_lines_inside_a_multiline_string_or_continued_by_backslash_are_skipped_and_reported(project: Path) -> None:
    path = write(project, "model.py", '''
        import torch


        @torch.compile
        def step(x):
            print("""y
        is""", x)
            print("w", \\
                  x)
            print("x", x)
            return x
        ''')

    added = run_cli("--add-noqa", "model.py", cwd=project)

    assert added.code == 1
    assert "model.py:6:5: GM201: the line cannot take a comment" in added.err
    assert "model.py:8:5: GM201: the line cannot take a comment" in added.err
    assert "Added 1 noqa directive." in added.err
    assert '    print("w", \\\n          x)\n    print("x", x)  # noqa: GM201\n' in path.read_text()
    remaining = run_cli("model.py", cwd=project)
    assert remaining.out.count("GM201") == 2 and "model.py:6:5" in remaining.out and "model.py:8:5" in remaining.out


def test_add_noqa_diff_prints_the_directives_and_writes_nothing(project: Path) -> None:
    path = write(project, "model.py", LEGACY)

    shown = run_cli("--add-noqa", "--diff", "model.py", cwd=project)

    assert shown.code == 1
    assert '+    print("y:", y.data)  # noqa: GM201\n' in shown.out and shown.out.startswith("--- a/model.py")
    assert path.read_text() == LEGACY


def test_add_noqa_writes_through_symlinks_and_refuses_read_only_files(project: Path) -> None:
    target = write(project, "real.py", PRINT_PROGRAM)
    (project / "link.py").symlink_to(target)
    locked = write(project, "locked.py", PRINT_PROGRAM)
    locked.chmod(0o444)

    added = run_cli("--add-noqa", "link.py", "locked.py", cwd=project)

    assert added.code == 1
    assert "locked.py: read-only (-r--r--r--); noqa not written" in added.err
    assert (project / "link.py").is_symlink() and "# noqa: GM201" in target.read_text()
    assert locked.read_text() == PRINT_PROGRAM and stat.S_IMODE(locked.stat().st_mode) == 0o444


def test_add_noqa_keeps_hard_links_shared(project: Path) -> None:
    first = write(project, "model.py", PRINT_PROGRAM)
    second = project / "other_name.py"
    os.link(first, second)

    assert run_cli("--add-noqa", "model.py", cwd=project).code == 0

    assert first.stat().st_ino == second.stat().st_ino and "# noqa: GM201" in second.read_text()


@pytest.mark.parametrize("other", [["--fix"], ["--baseline", "b.json"], ["--write-baseline", "b.json"]])
def test_add_noqa_combines_with_no_other_mode(project: Path, other: list[str]) -> None:
    (project / "b.json").write_text(json.dumps({"graphmend-lint-baseline": 1, "findings": []}))
    write(project, "model.py", PRINT_PROGRAM)

    refused = run_cli("--add-noqa", *other, "model.py", cwd=project)

    assert refused.code == 2 and f"--add-noqa cannot be combined with {other[0]}" in refused.err
    assert (project / "model.py").read_text() == PRINT_PROGRAM


def test_baseline_survives_lines_inserted_above_a_finding(project: Path) -> None:
    path = write(project, "model.py", LEGACY)
    written = run_cli("--write-baseline", "baseline.json", cwd=project)
    assert written.code == 0 and "Wrote 3 findings to baseline.json." in written.err
    moved = LEGACY.replace("    y = x * 2\n", "    # scaled\n    y = x * 2\n\n    y = y + 0\n")
    path.write_text(moved.replace('print("y:", y.data)   ', 'print("y:",  y.data)  # blanks and a comment'))

    checked = run_cli("--baseline", "baseline.json", cwd=project)

    assert checked.code == 0, checked.out
    assert "All checks passed!" in checked.out
    assert "3 findings in the baseline baseline.json not shown" in checked.err


def test_a_finding_added_after_the_baseline_is_reported_and_fails(project: Path) -> None:
    path = write(project, "model.py", LEGACY)
    assert run_cli("--write-baseline", "baseline.json", cwd=project).code == 0
    path.write_text(LEGACY.replace("    return y.relu()\n", '    print("y:", y.data)\n    return y.relu()\n'))

    checked = run_cli("--baseline", "baseline.json", "--output-format", "json", cwd=project)

    assert checked.code == 1
    findings = json.loads(checked.out)
    assert [(f["code"], f["location"]["row"]) for f in findings] == [("GM201", 11)]


def test_a_baseline_is_read_from_any_working_directory(project: Path) -> None:
    write(project, "pkg/model.py", LEGACY)
    assert run_cli("--write-baseline", "baseline.json", "pkg", cwd=project).code == 0
    stored = json.loads((project / "baseline.json").read_text())["findings"]
    assert {entry["path"] for entry in stored} == {"pkg/model.py"}

    checked = run_cli("--baseline", "../baseline.json", ".", cwd=project / "pkg")

    assert checked.code == 0, checked.out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "missing.json: cannot read baseline: No such file or directory"),
        ("{not json", "missing.json: baseline is not valid JSON"),
        ("[]", "missing.json: not a graphmend-lint baseline"),
        ('{"graphmend-lint-baseline": 1, "findings": [{"path": "a.py"}]}', "missing.json: baseline finding 0 needs"),
    ],
)
def test_a_bad_baseline_is_an_error_naming_the_file(project: Path, content: str | None, message: str) -> None:
    if content is not None:
        (project / "missing.json").write_text(content)
    write(project, "model.py", PRINT_PROGRAM)

    checked = run_cli("--baseline", "missing.json", "model.py", cwd=project)

    assert checked.code == 2 and checked.out == ""
    assert f"graphmend-lint: error: {message}" in checked.err


def test_the_baseline_shown_in_the_cli_docs_is_what_write_baseline_writes(project: Path) -> None:
    files = example_files(ADOPTION_GUIDE)
    earlier = "".join(line for line in files["train.py"].splitlines(keepends=True) if ADDED_LATER not in line)
    (project / "train.py").write_text(earlier)

    assert run_cli("--write-baseline", "baseline.json", "train.py", cwd=project).code == 0

    assert (project / "baseline.json").read_text() == files["baseline.json"]
