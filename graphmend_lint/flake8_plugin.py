"""graphmend-lint as a flake8 plugin (``GM`` codes).

A thin adapter over :func:`graphmend_lint.pipeline.analyze`, so flake8 reports
exactly what ``graphmend-lint`` reports for one file under the same
``[tool.graphmend-lint]`` settings. The split of duties with flake8:

* flake8 owns *which* codes are shown: ``--select``, ``--extend-ignore``,
  ``per-file-ignores`` and ``# noqa``. The plugin therefore runs every rule and
  drops graphmend's own select/ignore/per-file-ignores; keeping them would make
  ``flake8 --select GM201`` silently show nothing when the config ignores it.
* graphmend's config still decides *how* rules analyse: ``scope``, rule
  options, ``extra-compile-functions``, ``assume-tensor-parameters``.
* flake8 reports unparsable files as E999 and never calls tree plugins on
  them, so GM001 is switched off here rather than reported twice.

The pipeline also applies graphmend's ``# noqa`` comments. Its syntax is
flake8's (``# noqa``, ``# noqa: GM201``), so the second filter can only agree
with flake8's; the one visible difference is that ``flake8 --disable-noqa``
cannot resurrect a GM finding a comment suppressed.

Columns are yielded 0-based, as flake8 expects (it adds 1 when printing);
TorchFix adds 1 itself and ends up off by one.

Limitation: flake8 lints one file at a time, so compile scope reached only
from *another* file (``torch.compile(Model())`` in ``train.py`` making
``Model.forward`` in ``model.py`` traced) is not seen; the ``graphmend-lint``
CLI follows it. ``scope = "modules"`` covers the usual case.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path

from graphmend_lint import __version__
from graphmend_lint.config import Settings, load_settings
from graphmend_lint.pipeline import SYNTAX_ERROR_CODE, analyze
from graphmend_lint.source import SourceFile

#: A flake8 result: line (1-based), column (0-based), "CODE message", checker type.
Flake8Result = tuple[int, int, str, type]


class PluginInternalError(RuntimeError):
    """A rule crashed on a file; flake8 shows this and fails the run, as the CLI exits 2."""


@cache
def settings_for_directory(directory: str) -> Settings:
    """The analysis settings for files in *directory*, read once per directory.

    flake8 calls the plugin once per file, and walking up to the config file
    and parsing TOML for each one would dominate small files.
    """
    settings = load_settings(start=Path(directory))
    return replace(
        settings,
        select=("ALL",),
        extend_select=(),
        ignore=(SYNTAX_ERROR_CODE,),
        per_file_ignores=(),
    )


class Flake8Plugin:
    """The ``GM`` checker flake8 instantiates for each file.

    flake8 decides from the ``__init__`` parameters how to call a plugin:
    ``tree`` makes it a once-per-file AST plugin. The tree itself is not used:
    the pipeline parses the text again to get its own positions and astroid
    tree, so the text is rebuilt from ``lines``.

    The analysis runs here rather than in :meth:`run` because flake8 wraps only
    the constructor: a config error or a crashing rule raised here is reported
    as "file: GM failed during execution due to ..." and fails the run (as the
    CLI exits 2), whereas one raised while flake8 iterates :meth:`run` escapes
    as a bare traceback.
    """

    name = "graphmend-lint"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: Sequence[str]) -> None:
        directory = str(Path(filename).absolute().parent)
        outcome = analyze(SourceFile("".join(lines)), filename, settings_for_directory(directory))
        if outcome.internal_errors:
            raise PluginInternalError("; ".join(outcome.internal_errors))
        self.diagnostics = outcome.diagnostics

    def run(self) -> Iterator[Flake8Result]:
        """Yield ``(line, col0, "GMxxx message", type(self))`` for each finding."""
        for diagnostic in self.diagnostics:
            yield diagnostic.start.line, diagnostic.start.col, f"{diagnostic.code} {diagnostic.message}", type(self)
