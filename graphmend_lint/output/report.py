"""What every output format is given, and the few facts they all derive from it.

The formatters never see the command line or the settings object: the caller
condenses one run into a :class:`Report`, so each format is a pure function of
it and can be tested with hand-built diagnostics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import attrgetter

from graphmend_lint.diagnostics import Diagnostic, Position

_sort_key = attrgetter("sort_key")


@dataclass(frozen=True)
class Report:
    """The outcome of one run, as the output formats need it.

    ``hidden_unsafe_fixes`` counts findings whose UNSAFE fix was not enabled;
    the caller knows it (it decided what ``--fix`` may touch), so it is passed
    in rather than guessed here. ``applied`` is what ``--fix`` changed and is
    only listed with ``show_fixes``. ``unchecked`` counts paths that could not
    be checked (missing, unreadable, undecodable), ``unfixed`` files whose
    fixes were not written, ``skipped`` files skipped on purpose (size,
    binary): the summary must never read as a clean bill for them.
    ``sources`` holds each file's text and ``cell_sources`` each notebook
    cell's, keyed by (path, cell), for the formats that quote source lines.
    """

    diagnostics: tuple[Diagnostic, ...]
    fixed_count: int = 0
    hidden_unsafe_fixes: int = 0
    applied: tuple[Diagnostic, ...] = ()
    show_fixes: bool = False
    statistics: bool = False
    quiet: bool = False
    unsafe_fixes: bool = False
    rule_urls: Mapping[str, str] = field(default_factory=dict)
    rule_names: Mapping[str, str] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    cell_sources: Mapping[tuple[str, int], str] = field(default_factory=dict)
    tool_version: str = ""
    unchecked: int = 0
    unfixed: int = 0
    skipped: int = 0

    def __post_init__(self) -> None:
        # Callers sort already; sorting again here means no format can ever
        # print findings out of order (a TorchFix complaint users remember).
        object.__setattr__(self, "diagnostics", tuple(sorted(self.diagnostics, key=_sort_key)))
        object.__setattr__(self, "applied", tuple(sorted(self.applied, key=_sort_key)))

    def is_fixable(self, diagnostic: Diagnostic) -> bool:
        """Whether ``--fix`` would apply this finding's fix under this run's settings.

        This is the single definition behind the ``[*]`` marker, the fixable
        count and the statistics column, so they can never disagree.
        """
        return diagnostic.fix is not None and diagnostic.fix.is_applicable(self.unsafe_fixes)

    @property
    def fixable_count(self) -> int:
        """How many remaining findings ``--fix`` would fix under these settings."""
        return sum(1 for diagnostic in self.diagnostics if self.is_fixable(diagnostic))


def in_cell(diagnostic: Diagnostic, message: str) -> str:
    """*message* prefixed with ``cell N: `` for a notebook finding.

    Formats whose locations have no notion of a cell (GitHub annotations,
    SARIF regions) would otherwise give a line that means nothing in the
    ``.ipynb`` file with no word of which cell it counts in.
    """
    return message if diagnostic.cell is None else f"cell {diagnostic.cell}: {message}"


def one_based(position: Position) -> tuple[int, int]:
    """``(line, column)`` with a 1-based column, as every format here counts.

    Columns are 0-based internally (flake8 wants them so); converting in
    exactly one place is what keeps an off-by-one like TorchFix's out of
    every format.
    """
    return position.line, position.col + 1
