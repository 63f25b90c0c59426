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

_LINE_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(
    r"^#\s*graphmend-lint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?\s*$", re.IGNORECASE
)
ALL_CODES = frozenset({"*"})


def _codes(text: str | None) -> frozenset[str]:
    if not text:
        return ALL_CODES
    return frozenset(code.upper() for code in re.split(r"[\s,]+", text.strip()) if code)


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
                line_noqa = _LINE_NOQA.search(token.string)
                if line_noqa:
                    by_line[token.start[0]] = _codes(line_noqa.group("codes"))
        except (tokenize.TokenError, SyntaxError):
            pass  # a file that doesn't tokenize has no trustworthy comments
        return cls(by_line=by_line, file_level=file_level)

    def suppresses(self, diagnostic: Diagnostic) -> bool:
        if self.file_level is not None and _matches(self.file_level, diagnostic.code):
            return True
        codes = self.by_line.get(diagnostic.noqa_line or diagnostic.start.line)
        return codes is not None and _matches(codes, diagnostic.code)


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
    wanted = {d.noqa_line or d.start.line for d in diagnostics}
    return any(0 < line <= len(lines) and "noqa" in lines[line - 1].lower() for line in wanted)
