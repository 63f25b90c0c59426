"""The server's document linter: the command line's findings for a path, and the engine's cache used sparingly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import PRINT_PROGRAM, REPO, run_cli, write

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


def test_the_server_never_imports_torch(project: Path) -> None:
    """Linting, hover and fixes in the server run with torch made unimportable, as on a machine without it."""
    path = write(project, "step.py", PRINT_PROGRAM)
    script = f"""
import sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked in this test")
sys.meta_path.insert(0, NoTorch())
from graphmend_lint.server.app import build_server
from graphmend_lint.server.actions import code_actions
from graphmend_lint.server.hover import hover_markdown
linted = build_server().linter.lint("file:///step.py", {str(path)!r}, open({str(path)!r}).read(), persist=False)
assert [d.code for d in linted.diagnostics] == ["GM201"], linted.diagnostics
assert hover_markdown(linted.diagnostics) and code_actions("file:///step.py", linted, linted.diagnostics, None, "utf-16")
assert not any(m == "torch" or m.startswith("torch.") for m in sys.modules)
"""
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=project,
                               env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert completed.returncode == 0, completed.stderr
