"""Which rule codes are on for a file: ``select``/``ignore``/``per-file-ignores`` resolved like ruff.

Its own module so that fixes which consult the selection (a side-effect fix picks a strategy
only among selected codes) need not import the pipeline, which imports every rule.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from pathlib import PurePath

from graphmend_lint.config import Settings


def _matches(code: str, selectors: Iterable[str]) -> int:
    """Length of the longest selector matching *code* (0: none). ``ALL`` has length 1."""
    best = 0
    for selector in selectors:
        if selector == "ALL":
            best = max(best, 1)
        elif code.startswith(selector):
            best = max(best, len(selector) + 1)
    return best


def is_selected(code: str, settings: Settings, path: str | None = None) -> bool:
    """ruff's rule: the most specific of select/ignore wins; ignore wins ties."""
    selected = _matches(code, (*settings.select, *settings.extend_select))
    ignored = _matches(code, (*settings.ignore, *_per_file_ignores(settings, path)))
    return selected > 0 and selected > ignored


def reports_syntax_errors(code: str, settings: Settings, path: str | None = None) -> bool:
    """A file that does not parse is reported unless *code* (GM001) is ignored by name or prefix.

    ``--select GM401`` on a broken file must not print "All checks passed!": nothing
    was checked. ruff shows syntax errors whatever the selection; here an explicit
    ``ignore`` (the flake8 plugin's, since flake8 reports E999 itself) still silences them.
    """
    ignored = _matches(code, (*settings.ignore, *_per_file_ignores(settings, path)))
    return is_selected(code, settings, path) or ignored == 0


def _per_file_ignores(settings: Settings, path: str | None) -> list[str]:
    if path is None or not settings.per_file_ignores:
        return []
    pure = PurePath(path)
    try:
        relative = pure.relative_to(settings.root).as_posix()
    except ValueError:
        relative = pure.as_posix()
    codes: list[str] = []
    for pattern, ignored in settings.per_file_ignores:
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(pure.name, pattern):
            codes.extend(ignored)
    return codes
