"""``--add-noqa``: grandfather every current finding with a ``# noqa: GMxxx`` comment, as ruff does.

A team adopting the linter on a large code base can accept today's findings
in one commit and see only new ones afterwards. Three promises:

* **Where the matcher reads.** A directive goes on
  :func:`graphmend_lint.noqa.noqa_line` of its finding, the line the matcher
  looks at, so ``--add-noqa`` followed by a lint is clean by construction. A
  finding spanning several lines gets its directive on its first line (where
  Dynamo logs the break and the finding starts).
* **Formatting kept.** Only the end of a flagged line changes. A line whose
  comment already holds ``# noqa: X`` gets the new codes appended inside that
  directive, with its separator (``# noqa: X, GM201``); a line with another
  comment gets ``  # noqa: GM201`` after it (the matcher searches the whole
  comment); any other line loses its trailing blanks and gains
  ``  # noqa: GM201``. Line breaks, encoding and everything else stay.
* **Idempotent.** Findings a directive suppresses never reach this module, so
  a second run adds nothing.

A line that ends inside a multi-line string, or continues with a backslash,
cannot take a comment: its findings are skipped and reported, never forced.
Every new text is checked before it is returned: its syntax tree must equal
the old one (only comments changed), and the matcher must find each directive.
Writing goes through :func:`graphmend_lint.engine.write_back`, the fixer's
path to disk.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from graphmend_lint.config import Settings
from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.disk import ReadFailure, WriteRefused
from graphmend_lint.engine import RunReport, write_back
from graphmend_lint.noqa import LINE_NOQA, Suppressions, comments, noqa_line
from graphmend_lint.pipeline import SYNTAX_ERROR_CODE

_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")
_SEPARATOR = re.compile(r"[\s,]+")


@dataclass(frozen=True)
class NoqaEdit:
    """One text with directives added: how many lines gained codes, and the findings that could not."""

    text: str
    added: int
    skipped: tuple[Diagnostic, ...]


def _lines_ending_in_code(text: str) -> set[int]:
    """Lines whose end is outside any string and not a backslash continuation.

    tokenize emits a NEWLINE or NL token at the end of exactly those lines; a
    line ending inside a triple-quoted string or with ``\\`` gets none.
    """
    lines: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.NEWLINE, tokenize.NL):
                lines.add(token.start[0])
    except (tokenize.TokenError, SyntaxError):
        pass
    return lines


def _with_codes(line: str, comment: tuple[int, str] | None, codes: list[str]) -> str:
    """*line* with *codes* merged into its noqa directive, or a new directive appended."""
    if comment is not None:
        column, text = comment
        directive = LINE_NOQA.search(text)
        if directive is not None and directive.group("codes"):
            existing = directive.group("codes")
            separator = _SEPARATOR.search(existing)
            joiner = separator.group(0) if separator else ", "
            at = column + directive.end("codes")
            return line[:at] + "".join(joiner + code for code in codes) + line[at:]
    return line.rstrip() + "  # noqa: " + ", ".join(codes)


def add_directives(text: str, diagnostics: Iterable[Diagnostic]) -> NoqaEdit:
    """*text* with a ``# noqa`` directive for every finding in *diagnostics* that can take one."""
    wanted: dict[int, list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        wanted.setdefault(noqa_line(diagnostic), []).append(diagnostic)
    open_lines = _lines_ending_in_code(text)
    line_comments = comments(text)
    parts = _LINE_BREAK.split(text)  # even indexes: lines; odd: their line breaks
    skipped: list[Diagnostic] = []
    edited: dict[int, str] = {}
    for number, found in sorted(wanted.items()):
        if number not in open_lines or 2 * (number - 1) >= len(parts):
            skipped.extend(found)
            continue
        comment = line_comments.get(number)
        present = _present_codes(comment)
        codes = sorted({d.code for d in found} - present)
        if codes:
            edited[number] = _with_codes(parts[2 * (number - 1)], comment, codes)
    new_text = _apply(parts, edited)
    unread = _unread_lines(new_text, wanted, edited)
    if unread:  # never keep a directive the matcher would not see
        skipped.extend(d for number in sorted(unread) for d in wanted[number])
        edited = {number: line for number, line in edited.items() if number not in unread}
        new_text = _apply(parts, edited)
    return NoqaEdit(text=new_text, added=len(edited), skipped=tuple(skipped))


def _present_codes(comment: tuple[int, str] | None) -> set[str]:
    directive = LINE_NOQA.search(comment[1]) if comment else None
    if directive is None or not directive.group("codes"):
        return set()
    return {code.upper() for code in _SEPARATOR.split(directive.group("codes")) if code}


def _apply(parts: list[str], edited: dict[int, str]) -> str:
    new_parts = list(parts)
    for number, line in edited.items():
        new_parts[2 * (number - 1)] = line
    return "".join(new_parts)


def _unread_lines(text: str, wanted: dict[int, list[Diagnostic]], edited: dict[int, str]) -> set[int]:
    """Edited lines where the matcher would not suppress every finding."""
    suppressions = Suppressions.from_source(text)
    return {number for number in edited if not all(suppressions.suppresses(d) for d in wanted[number])}


def same_code(old: str, new: str) -> bool:
    """Whether two texts parse to the same tree: an edit that touched only comments."""
    try:
        return ast.dump(ast.parse(old)) == ast.dump(ast.parse(new))
    except (SyntaxError, ValueError):
        return False


@dataclass
class AddNoqaReport:
    """What ``--add-noqa`` did across a run: counts, new texts, and what it could not do."""

    added: int = 0
    texts: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (old text, new text)
    skipped: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def add_noqa(result: RunReport, settings: Settings, write: bool = True) -> AddNoqaReport:
    """Add directives for every finding of a lint *result*; with *write*, save each changed file.

    A file that does not parse gets nothing (its comments cannot be trusted).
    Two paths to one file (a symlink and its target) are edited once.
    """
    report = AddNoqaReport()
    seen: set[str] = set()
    for file in result.files:
        if not file.diagnostics or file.source is None:
            continue
        if file.cell_sources:  # the text is the notebook's JSON: a comment belongs in a cell's source
            report.errors.append(f"{file.path}: --add-noqa does not edit notebooks yet; add `# noqa: CODE` in the cell")
            continue
        if any(d.code == SYNTAX_ERROR_CODE for d in file.diagnostics):
            report.errors.append(f"{file.path}: does not parse; no noqa added")
            continue
        real = os.path.realpath(file.path)
        if real in seen:
            continue
        seen.add(real)
        edit = add_directives(file.source, file.diagnostics)
        report.skipped.extend(edit.skipped)
        if not edit.added:
            continue
        if not same_code(file.source, edit.text):
            report.errors.append(f"{file.path}: adding noqa would change the code; no noqa added")
            continue
        if write:
            try:
                write_back(Path(file.path), file.source, edit.text, settings, what="noqa")
            except OSError as error:
                report.errors.append(f"{file.path}: cannot write noqa: {error}")
                continue
            except (ReadFailure, WriteRefused) as error:
                report.errors.append(str(error))
                continue
        report.texts[file.path] = (file.source, edit.text)
        report.added += edit.added
    return report
