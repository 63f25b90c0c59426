"""The server's document linter: the command line's findings for a path, and the engine's cache used sparingly."""

from __future__ import annotations

from pathlib import Path

from conftest import PRINT_PROGRAM, run_cli, write

from graphmend_lint.engine import CACHE_DIR
from graphmend_lint.server.documents import DocumentLinter


def _cache_entries(root: Path) -> list[Path]:
    return [p for p in (root / CACHE_DIR).rglob("*") if p.is_file() and p.name != ".gitignore"]


def test_findings_match_the_command_line_for_the_same_path(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphmend-lint.per-file-ignores]\n"skip_*.py" = ["GM201"]\n')
    linter = DocumentLinter(use_cache=False)
    for name in ("step.py", "skip_step.py"):
        path = write(project, name, PRINT_PROGRAM)
        linted = linter.lint(path.as_uri(), str(path), PRINT_PROGRAM, persist=False)
        cli = run_cli(name, "--no-cache", "--output-format", "concise", "-q", cwd=project)
        expected = [line.split(": ", 1)[1].split(" ", 1)[0] for line in cli.out.splitlines()]
        assert [d.code for d in linted.diagnostics] == expected, name
    assert [d.code for d in linter.get((project / "step.py").as_uri()).diagnostics] == ["GM201"]
    assert linter.get((project / "skip_step.py").as_uri()).diagnostics == []


def test_only_opened_or_saved_texts_reach_the_disk_cache(project: Path) -> None:
    path = write(project, "step.py", PRINT_PROGRAM)
    linter = DocumentLinter()
    linter.lint(path.as_uri(), str(path), PRINT_PROGRAM + "# typing\n", persist=False)
    assert _cache_entries(project) == []
    first = linter.lint(path.as_uri(), str(path), PRINT_PROGRAM, persist=True)
    assert len(_cache_entries(project)) == 1
    again = DocumentLinter().lint(path.as_uri(), str(path), PRINT_PROGRAM, persist=True)
    assert again.diagnostics == first.diagnostics and again.diagnostics
