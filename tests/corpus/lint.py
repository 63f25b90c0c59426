"""The linter's findings on one program, through the public API, under each scope the corpus scores."""

from __future__ import annotations

from pathlib import Path

from graphmend_lint import lint_source
from graphmend_lint.config import Settings

#: ``compiled`` is the default a user gets; ``modules`` is the library-author scope.
SCOPES = ("compiled", "modules")


def findings(path: Path) -> dict[str, list[tuple[int, str]]]:
    """``{scope: sorted [(line, code), ...]}`` with default settings apart from the scope."""
    source = path.read_text(encoding="utf-8")
    return {
        scope: sorted({(d.start.line, d.code) for d in lint_source(source, str(path), Settings(scope=scope))})
        for scope in SCOPES
    }
