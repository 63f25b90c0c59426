"""Output formats: each turns one :class:`Report` into the text the CLI prints.

Each format lives in its own small module and is a pure function of the
report, so adding one never touches the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from graphmend_lint.output import concise, full, github, json_format, sarif
from graphmend_lint.output.report import Report

__all__ = ["FORMATS", "Report", "render"]

FORMATS = ("concise", "full", "json", "sarif", "github")

_RENDERERS: Mapping[str, Callable[[Report], str]] = {
    "concise": concise.render,
    "full": full.render,
    "json": json_format.render,
    "sarif": sarif.render,
    "github": github.render,
}


def render(format: str, report: Report) -> str:
    """The complete output of *format*, every line newline-terminated (possibly empty).

    Raises :class:`ValueError` for an unknown format, naming the valid ones,
    so the CLI can report it as a usage error.
    """
    try:
        renderer = _RENDERERS[format]
    except KeyError:
        raise ValueError(f"unknown output format {format!r}; expected one of: {', '.join(FORMATS)}") from None
    return renderer(report)
