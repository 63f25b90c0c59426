"""graphmend-lint: find and fix torch.compile graph breaks before they happen.

The public API is pure (no I/O except :func:`lint_paths`, which reads files):

* :func:`lint_source` lints one source text;
* :func:`fix_source` applies fixes to one source text;
* :func:`lint_paths` lints files and directories.

The CLI and the flake8 plugin are thin adapters over these.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from graphmend_lint.config import Settings
    from graphmend_lint.diagnostics import Diagnostic, FixResult
    from graphmend_lint.engine import RunReport

__all__ = ["__version__", "fix_source", "lint_paths", "lint_source"]


def _settings(config: Settings | None) -> Settings:
    from graphmend_lint.config import Settings

    return config if config is not None else Settings()


def lint_source(source: str, path: str = "<stdin>", config: Settings | None = None) -> list[Diagnostic]:
    """Diagnostics for one source text, sorted by position."""
    from graphmend_lint.pipeline import analyze
    from graphmend_lint.source import SourceFile

    return analyze(SourceFile(source), path, _settings(config)).diagnostics


def fix_source(
    source: str, path: str = "<stdin>", config: Settings | None = None, unsafe: bool = False
) -> FixResult:
    """Apply every applicable fix to *source* until stable; never returns unparsable code."""
    from graphmend_lint.pipeline import fix
    from graphmend_lint.source import SourceFile

    return fix(SourceFile(source), path, _settings(config), unsafe).result


def lint_paths(paths: Sequence[str], config: Settings | None = None, jobs: int | None = None) -> RunReport:
    """Lint every Python file under *paths* (no fixes are written)."""
    from graphmend_lint.engine import run

    return run(paths, _settings(config), jobs=jobs)
