"""Findings and the edits that fix them.

Positions are stored the way Python's own tools think about them: lines are
1-based and columns are 0-based *character* offsets. Each output format
converts at its edge (ruff's JSON is 1-based, flake8 wants 0-based), so no
rule ever has to think about it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace


class Applicability(str, enum.Enum):
    """How much a fix may be trusted, in ruff's vocabulary.

    ``SAFE`` fixes keep behaviour and are applied by ``--fix``. ``UNSAFE``
    fixes can change behaviour (cost, exception types, output timing) and need
    ``--unsafe-fixes``. ``DISPLAY_ONLY`` fixes are shown but never applied.
    """

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


@dataclass(frozen=True, order=True)
class Position:
    """A point in a source file: 1-based line, 0-based character column."""

    line: int
    col: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between ``start`` and ``end`` with ``content``."""

    start: Position
    end: Position
    content: str


@dataclass(frozen=True)
class Fix:
    """A set of edits that must be applied together, or not at all."""

    edits: tuple[Edit, ...]
    applicability: Applicability
    message: str

    @classmethod
    def advice(cls, message: str) -> "Fix":
        """A fix with no edits: where no rewrite is safe to offer, the finding still says what to do by hand."""
        return cls(edits=(), applicability=Applicability.DISPLAY_ONLY, message=message)

    def is_applicable(self, unsafe: bool) -> bool:
        """Whether ``--fix`` (plus ``--unsafe-fixes`` when *unsafe*) applies it."""
        if self.applicability is Applicability.SAFE:
            return True
        return unsafe and self.applicability is Applicability.UNSAFE


@dataclass(frozen=True)
class Diagnostic:
    """One finding of one rule at one place.

    ``cell`` is the notebook cell (1-based, as ruff counts) that ``start`` and
    ``end`` are relative to; None for a plain file.
    """

    code: str
    message: str
    path: str
    start: Position
    end: Position
    fix: Fix | None = None
    noqa_line: int | None = None
    scope_chain: tuple[str, ...] = field(default=())
    cell: int | None = None

    @property
    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.path, self.cell or 0, self.start.line, self.start.col, self.code)

    def with_path(self, path: str) -> Diagnostic:
        return replace(self, path=path)


@dataclass(frozen=True)
class FixResult:
    """What :func:`graphmend_lint.fix_source` did to one source text."""

    source: str
    applied: tuple[Diagnostic, ...]
    remaining: tuple[Diagnostic, ...]

    @property
    def changed(self) -> bool:
        return bool(self.applied)
