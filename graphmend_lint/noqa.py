"""``# noqa`` suppression, read from real comment tokens.

Comments are found with :mod:`tokenize`, so ``"# noqa"`` inside a string
literal suppresses nothing. This only runs for files that have findings.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

from graphmend_lint.diagnostics import Diagnostic

LINE_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(
    r"^#\s*graphmend-lint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?\s*$", re.IGNORECASE
)
ALL_CODES = frozenset({"*"})


def _codes(text: str | None) -> frozenset[str]:
    if not text:
        return ALL_CODES
    return frozenset(code.upper() for code in re.split(r"[\s,]+", text.strip()) if code)


def noqa_line(diagnostic: Diagnostic) -> int:
    """The line whose ``# noqa`` comment suppresses *diagnostic*.

    One definition for the matcher here and for ``--add-noqa``
    (:mod:`graphmend_lint.add_noqa`), so a directive is always inserted where
    it will be read: the finding's explicit ``noqa_line`` or its first line.
    """
    return diagnostic.noqa_line or diagnostic.start.line


def _matches(codes: frozenset[str], code: str) -> bool:
    return "*" in codes or code in codes


@dataclass(frozen=True)
class Suppressions:
    """The noqa comments of one file: per line, and for the whole file."""

    by_line: dict[int, frozenset[str]]
    file_level: frozenset[str] | None

    @classmethod
    def from_source(cls, text: str) -> Suppressions:
        by_line: dict[int, frozenset[str]] = {}
        file_level: frozenset[str] | None = None
        try:
            for token in tokenize.generate_tokens(io.StringIO(text).readline):
                if token.type != tokenize.COMMENT:
                    continue
                whole_file = _FILE_NOQA.match(token.string)
                if whole_file:
                    codes = _codes(whole_file.group("codes"))
                    file_level = codes if file_level is None else file_level | codes
                    continue
                line_noqa = LINE_NOQA.search(token.string)
                if line_noqa:
                    by_line[token.start[0]] = _codes(line_noqa.group("codes"))
        except (tokenize.TokenError, SyntaxError):
            pass  # a file that doesn't tokenize has no trustworthy comments
        return cls(by_line=by_line, file_level=file_level)

    def suppresses(self, diagnostic: Diagnostic) -> bool:
        if self.file_level is not None and _matches(self.file_level, diagnostic.code):
            return True
        codes = self.by_line.get(noqa_line(diagnostic))
        return codes is not None and _matches(codes, diagnostic.code)


def comments(text: str) -> dict[int, tuple[int, str]]:
    """Each line's comment as (start column, text), read from tokens as the matcher reads them.

    ``--add-noqa`` merges into these comments and the baseline leaves them out
    of its fingerprints. A file that stops tokenizing keeps the comments found
    before the error, as :meth:`Suppressions.from_source` does.
    """
    found: dict[int, tuple[int, str]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                found[token.start[0]] = (token.start[1], token.string)
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def unsuppressed(text: str, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Drop the diagnostics a noqa comment suppresses."""
    found = list(diagnostics)
    if not found or not _may_suppress(text, found):
        return found
    suppressions = Suppressions.from_source(text)
    return [d for d in found if not suppressions.suppresses(d)]


_MAYBE_FILE_NOQA = re.compile(r"#\s*graphmend-lint:\s*noqa", re.IGNORECASE)


def _may_suppress(text: str, diagnostics: list[Diagnostic]) -> bool:
    """Whether any noqa comment could apply: one on a finding's line, or a file-level one.

    Tokenizing is what makes noqa exact, and it costs a tenth of a second on a
    big file; transformers has many files with some unrelated ``# noqa``.
    """
    if "noqa" not in text.lower():
        return False
    if _MAYBE_FILE_NOQA.search(text):
        return True
    lines = text.splitlines()
    wanted = {noqa_line(d) for d in diagnostics}
    return any(0 < line <= len(lines) and "noqa" in lines[line - 1].lower() for line in wanted)
