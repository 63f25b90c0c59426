"""Lint the editor's open documents with the command line's pipeline, settings and cache.

The document's text is the editor's, not the disk's, but everything else is
what ``graphmend-lint PATH`` would do for that path: the nearest config file
above it, per-file ignores matched against it, the module name its package
gives it. The last result of each document is kept so that hover and code
actions answer from the findings the editor is showing, without linting again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from graphmend_lint.config import Settings, load_settings
from graphmend_lint.diagnostics import Diagnostic, Position
from graphmend_lint.engine import ResultCache
from graphmend_lint.pipeline import FileOutcome, analyze, fix
from graphmend_lint.source import SourceFile

#: How :func:`graphmend_lint.pipeline.analyze` names a text that has no file (an unsaved buffer).
UNSAVED_PATH = "<stdin>"


@dataclass(frozen=True)
class LintedDocument:
    """One version of an open document and what linting it found."""

    path: str
    source: SourceFile
    settings: Settings
    outcome: FileOutcome

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self.outcome.diagnostics

    def at(self, position: Position) -> list[Diagnostic]:
        """The findings whose range contains *position* (ends included: the cursor sits after a word)."""
        return [d for d in self.diagnostics if d.start <= position <= d.end]

    def overlapping(self, start: Position, end: Position) -> list[Diagnostic]:
        """The findings whose range meets the span from *start* to *end* (a selection or a cursor)."""
        return [d for d in self.diagnostics if d.start <= end and start <= d.end]

    def fixed_text(self, unsafe: bool) -> str:
        """The whole text after ``--fix`` (with *unsafe*, ``--unsafe-fixes``): the command line's fix loop."""
        return fix(self.source, self.path, self.settings, unsafe).result.source


def settings_for(path: str) -> Settings:
    """The settings the command line would use for *path* (raises ``ConfigError`` like it does)."""
    start = Path(path) if path != UNSAVED_PATH else Path.cwd()
    return load_settings(None, start if start.exists() else Path.cwd())


class DocumentLinter:
    """Lints document texts and remembers the last result per document URI.

    Results go through the engine's :class:`~graphmend_lint.engine.ResultCache`
    (the same key of text, settings, linter code and path): a text that was
    opened or saved before, in this editor session or the last, is not linted
    again. Texts typed but never saved are not written to the cache, which
    would otherwise grow by one entry per keystroke.
    """

    def __init__(self, use_cache: bool = True) -> None:
        self.use_cache = use_cache
        self._documents: dict[str, LintedDocument] = {}

    def lint(self, uri: str, path: str, text: str, *, persist: bool) -> LintedDocument:
        """Lint *text* as the file *path*; *persist*: the text is (about to be) on disk, cache it there."""
        source = SourceFile(text)
        settings = settings_for(path)
        cache = ResultCache(Path(settings.root), settings, self.use_cache and path != UNSAVED_PATH)
        key = cache.key(source.to_bytes(), path, ())
        outcome = cache.get(key)
        if outcome is None:
            outcome = analyze(source, path, settings)
            if persist:
                cache.put(key, outcome)
        document = LintedDocument(path, source, settings, outcome)
        self._documents[uri] = document
        return document

    def get(self, uri: str) -> LintedDocument | None:
        """The last result of the document, or None when it was never linted or was closed."""
        return self._documents.get(uri)

    def forget(self, uri: str) -> None:
        self._documents.pop(uri, None)
