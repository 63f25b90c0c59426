"""Jupyter notebooks as one Python module made of their code cells, and back.

Jupyter runs a notebook's code cells in one namespace, top to bottom, so a
``torch.compile`` in cell 5 can trace a function defined in cell 2. The
linter therefore analyses the code cells joined in order into one module
(:attr:`Notebook.module`) and maps every position back to ``(cell, line)``,
as ruff does. Cells are numbered from 1 among *all* cells, markdown included,
which is the number ruff prints and VS Code shows.

Two kinds of IPython syntax would not parse:

* a cell starting with a ``%%`` cell magic is handed to that magic, which
  need not run Python (``%%bash``, ``%%writefile``), so it is left out of the
  module, even where the body is Python (``%%time``): staying quiet beats
  guessing;
* line magics, shell escapes and help (``%matplotlib inline``, ``!pip ...``,
  ``files = !ls``, ``obj?``), with the lines a trailing backslash continues
  them on, are *masked*: in a cell that does not parse as it is, each such
  line becomes ``pass  # <the line>`` for the analysis, and is put back
  verbatim when a fixed cell is written.

Cells are separated in the module by a comment line (``# graphmend-lint
cell N``). It costs the analysis nothing, and it is how a fixed module is cut
back into cells: a fix whose edits moved or crossed a separator is refused
rather than guessed at.

Reading uses nbformat (an optional extra: the core depends on astroid, libcst
and tomli only), which reads and validates every notebook version it knows.
Validation relaxes "additional properties": Kaggle writes cell ``id``s into
format 4.4 notebooks and some tools leave ``outputs`` on markdown cells;
Jupyter opens both, and strict validation refused 10 of 557 real notebooks.

Writing does *not* re-serialise the notebook. Measured on 573 public
notebooks (unsloth's Colab and Kaggle notebooks, Azure ML's Jupyter ones;
2026-11-24), ``nbformat.writes`` reproduced 3 byte for byte; ``json.dumps``
reproduced 572 only when the indent, ``ensure_ascii`` and the final
newline were guessed per file, and missed one whatever the guess. Either
would turn a one-line fix into a whole-file diff somewhere. So the writer
splices: it finds the character span of each *edited* cell's ``source``
value in the original JSON text (:func:`_source_spans`) and replaces only
that span, in the layout that value had (a list of lines with its
indentation, or one string; escaped non-ASCII or not). Every byte outside the
edited cells' ``source`` values is the original's by construction, and the
result must load as the old notebook with only those sources changed
(:func:`_check_splice`) before anyone may write it; on all 573 notebooks an
edit to every code cell passed that check.
"""

from __future__ import annotations

import ast
import bisect
import json
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import PurePath
from typing import Any

from graphmend_lint.diagnostics import Diagnostic, Edit, Fix, Position

NOTEBOOK_SUFFIX = ".ipynb"
INSTALL_HINT = "pip install 'graphmend-lint[notebooks]'"

_SEPARATOR = "# graphmend-lint cell {number}\n"
_SEPARATOR_LINE = re.compile(r"^# graphmend-lint cell (\d+)\n", re.MULTILINE)
#: Line magics, shell escapes and help, alone or as an assignment's value (``x = !ls``, ``y = %time f()``).
_MAGIC_LINE = re.compile(r"^[ \t]*(?:[%!?]|[\w.]+[ \t]*=[ \t]*[%!]|[^#\n]*\?$)")
_MASK = "pass  # "
_JSON = json.JSONDecoder()


class NotebookError(Exception):
    """A notebook that cannot be read, or a fixed notebook that must not be written; names the file."""


@dataclass(frozen=True)
class CodeCell:
    """One code cell: what the user wrote, and what the analysis sees.

    ``masked`` is newline-terminated (cells usually lack a final newline) and
    has its magics masked; ``first_line`` is the module line it starts on.
    """

    number: int
    text: str
    masked: str
    masks: tuple[tuple[str, str], ...]
    first_line: int


@dataclass(frozen=True)
class Notebook:
    """A notebook's JSON text and its code cells, in order."""

    path: str
    text: str
    cells: tuple[CodeCell, ...]

    @classmethod
    def parse(cls, path: str, text: str) -> Notebook:
        """Read and validate *text* with nbformat; :class:`NotebookError` says what is wrong."""
        cells = _code_cells(path, _read(path, text))
        laid_out: list[CodeCell] = []
        line = 1
        for index, (number, source) in enumerate(cells):
            if index:
                line += 1  # the separator line
            masked, masks = _mask_magics(source)
            laid_out.append(CodeCell(number, source, masked, masks, line))
            line += masked.count("\n")
        return cls(path, text, tuple(laid_out))

    @cached_property
    def module(self) -> str:
        """The code cells as one module, separated by comment lines."""
        return "".join(
            (_SEPARATOR.format(number=cell.number) if index else "") + cell.masked
            for index, cell in enumerate(self.cells)
        )

    @cached_property
    def _starts(self) -> list[int]:
        return [cell.first_line for cell in self.cells]

    def cell_at(self, line: int) -> CodeCell:
        """The cell holding module line *line* (a separator counts as the end of the cell above)."""
        return self.cells[max(bisect.bisect_right(self._starts, line) - 1, 0)]

    def _in_cell(self, cell: CodeCell, position: Position) -> Position:
        last = max(cell.masked.count("\n"), 1)
        line = min(max(position.line - cell.first_line + 1, 1), last + 1)
        return Position(line, position.col)

    def to_cells(self, diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
        """Module positions rewritten as (cell, line in cell), as every output format reports them."""
        return [self._mapped(diagnostic) for diagnostic in diagnostics]

    def _mapped(self, diagnostic: Diagnostic) -> Diagnostic:
        cell = self.cell_at(diagnostic.start.line)
        noqa = diagnostic.noqa_line
        return replace(
            diagnostic,
            cell=cell.number,
            start=self._in_cell(cell, diagnostic.start),
            end=self._in_cell(cell, diagnostic.end),
            noqa_line=None if noqa is None else self._in_cell(cell, Position(noqa, 0)).line,
            fix=self._mapped_fix(diagnostic.fix),
            scope_chain=tuple(self._mapped_origin(step) for step in diagnostic.scope_chain),
        )

    def _mapped_origin(self, step: str) -> str:
        """A scope chain's ``nb.ipynb:12 torch.compile(f)`` origin as ``nb.ipynb:cell 4:2 torch.compile(f)``."""
        name = PurePath(self.path).name
        match = re.match(rf"{re.escape(name)}:(\d+) ", step)
        if match is None:
            return step
        line = int(match.group(1))
        cell = self.cell_at(line)
        return f"{name}:cell {cell.number}:{self._in_cell(cell, Position(line, 0)).line} {step[match.end():]}"

    def _mapped_fix(self, fix: Fix | None) -> Fix | None:
        if fix is None:
            return None
        edits = []
        for edit in fix.edits:
            cell = self.cell_at(edit.start.line)
            edits.append(Edit(self._in_cell(cell, edit.start), self._in_cell(cell, edit.end), edit.content))
        return replace(fix, edits=tuple(edits))

    def cell_sources(self) -> dict[int, str]:
        """Each code cell's text by number, for output formats that quote the source."""
        return {cell.number: cell.text for cell in self.cells}

    def with_module(self, module: str) -> str:
        """The notebook JSON text with the cells of a fixed *module*; raises :class:`NotebookError`.

        Only cells whose text changed are rewritten, each in its own layout.
        """
        pieces = self._split(module)
        changed: dict[int, str] = {}
        for cell, piece in zip(self.cells, pieces):
            if piece != cell.masked:
                changed[cell.number] = self._unmasked(cell, piece)
        if not changed:
            return self.text
        return _spliced(self.path, self.text, changed)

    def _split(self, module: str) -> list[str]:
        """Cut a fixed module back into cells at the separators, which must all be intact and in order."""
        separators = list(_SEPARATOR_LINE.finditer(module))
        expected = [str(cell.number) for cell in self.cells[1:]]
        if [match.group(1) for match in separators] != expected:
            raise NotebookError(f"{self.path}: a fix would move code between cells; fix not written")
        bounds = [0, *(edge for match in separators for edge in (match.start(), match.end())), len(module)]
        return [module[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2)]

    def _unmasked(self, cell: CodeCell, piece: str) -> str:
        """A fixed cell as the user will see it: magics restored, no newline the cell did not end with.

        Each masked line must come back exactly once and unmoved in its
        indentation; a fix that re-indented or dropped a magic is refused.
        """
        lines = piece.splitlines(keepends=True)
        for original, masked in cell.masks:
            found = [i for i, line in enumerate(lines) if line.rstrip("\r\n") == masked]
            if len(found) != 1:
                raise NotebookError(f"{self.path}: a fix in cell {cell.number} would change an IPython magic; fix not written")
            line = lines[found[0]]
            lines[found[0]] = original + line[len(masked) :]
        text = "".join(lines)
        if not cell.text.endswith("\n") and text.endswith("\n"):
            text = text[:-1]
        return text


def _read(path: str, text: str) -> Any:
    """The notebook as nbformat reads and validates it (version 4 only, as ruff)."""
    try:
        import nbformat
    except ImportError:
        raise NotebookError(f"{path}: linting notebooks needs nbformat; install it with `{INSTALL_HINT}`") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            notebook = nbformat.reader.reads(text)
            nbformat.validate(notebook, relax_add_props=True)
    except nbformat.reader.NotJSONError as error:
        raise NotebookError(f"{path}: not a notebook, invalid JSON: {error.__cause__ or error}") from None
    except (nbformat.ValidationError, nbformat.NBFormatError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise NotebookError(f"{path}: invalid notebook: {first}") from None
    if notebook.get("nbformat") != 4:
        raise NotebookError(f"{path}: notebook format {notebook.get('nbformat')} is not supported; save it as version 4")
    return notebook


def _code_cells(path: str, notebook: Any) -> list[tuple[int, str]]:
    """``(number, source)`` of each code cell the analysis can read (not a ``%%`` cell magic)."""
    cells = []
    for number, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type != "code":
            continue
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        if source.lstrip().startswith("%%"):
            continue
        cells.append((number, source))
    return cells


def _mask_magics(source: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The cell newline-terminated, with its magic lines masked when it does not parse as it is."""
    text = source if not source or source.endswith("\n") else source + "\n"
    if _parses(text):
        return text, ()
    lines = text.splitlines(keepends=True)
    masks = []
    continued = False  # a masked line ending in a backslash continues the magic on the next line
    indent = ""
    for index, line in enumerate(lines):
        if continued or _MAGIC_LINE.match(line):
            body = line.rstrip("\r\n")
            if not continued:  # continuation lines take the magic's indentation, or they would not parse
                indent = body[: len(body) - len(body.lstrip())]
            continued = body.endswith("\\")
            masked = f"{indent}{_MASK}{body.lstrip()}"
            masks.append((body, masked))
            lines[index] = masked + line[len(body) :]
    return "".join(lines), tuple(masks)


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


# -- writing: splice edited sources into the original JSON text ------------------------


def _spliced(path: str, text: str, changed: dict[int, str]) -> str:
    """*text* with the ``source`` of each cell in *changed* (number -> new text) replaced in place."""
    spans = _source_spans(text)
    ascii_only = _escapes_non_ascii(text)
    result = text
    for number in sorted(changed, reverse=True):  # back to front: earlier spans stay valid
        start, end = spans[number - 1]
        value = _source_value(result[start:end], changed[number], ascii_only)
        result = result[:start] + value + result[end:]
    _check_splice(path, text, result, changed)
    return result


def _source_spans(text: str) -> list[tuple[int, int]]:
    """The character span of each cell's ``source`` value in the notebook JSON, by cell index.

    json has no positions, so this walks the two levels that lead to the
    cells (the top object and the ``cells`` array) with the json module's
    own scanner, which returns where each value ends; values are never
    parsed by hand.
    """
    spans: list[tuple[int, int]] = []
    for key, start, end in _members(text, _skip(text, 0)):
        if key != "cells":
            continue
        for cell_start in _elements(text, start):
            spans.extend((s, e) for k, s, e in _members(text, cell_start) if k == "source")
    return spans


def _skip(text: str, index: int) -> int:
    while text[index] in " \t\r\n":
        index += 1
    return index


def _members(text: str, index: int) -> Iterable[tuple[str, int, int]]:
    """``(key, value start, value end)`` of the object starting at *index*."""
    index = _skip(text, index + 1)  # past "{"
    while text[index] != "}":
        key, index = _JSON.raw_decode(text, index)
        index = _skip(text, _skip(text, index) + 1)  # past ":"
        _, end = _JSON.raw_decode(text, index)
        yield key, index, end
        index = _skip(text, end)
        if text[index] == ",":
            index = _skip(text, index + 1)


def _elements(text: str, index: int) -> Iterable[int]:
    """The start of each element of the array starting at *index*."""
    index = _skip(text, index + 1)  # past "["
    while text[index] != "]":
        _, end = _JSON.raw_decode(text, index)
        yield index
        index = _skip(text, end)
        if text[index] == ",":
            index = _skip(text, index + 1)


def _escapes_non_ascii(text: str) -> bool:
    """Whether the writer escaped non-ASCII text (``ensure_ascii``): pure ASCII with ``\\u`` escapes above 0x7f."""
    return text.isascii() and re.search(r"\\u(?!00[0-7])[0-9a-fA-F]{4}", text) is not None


def _source_value(old: str, new: str, ascii_only: bool) -> str:
    """*new* as a JSON ``source`` value laid out like *old*: one string, or a list of lines indented alike."""
    if old.startswith('"'):
        return json.dumps(new, ensure_ascii=ascii_only)
    lines = new.splitlines(keepends=True)
    if not lines:
        return "[]"
    inner = re.match(r"\[(\s*)", old)
    closing = re.search(r"(\s*)\]$", old)
    lead = inner.group(1) if inner and old != "[]" else "\n"
    trail = closing.group(1) if closing and old != "[]" else "\n"
    items = [json.dumps(line, ensure_ascii=ascii_only) for line in lines]
    return "[" + lead + ("," + lead).join(items) + trail + "]"


def _check_splice(path: str, before: str, after: str, changed: dict[int, str]) -> None:
    """Refuse a spliced notebook that does not load as the old one with only *changed* sources new."""
    try:
        expected = _joined_sources(json.loads(before))
        for number, source in changed.items():
            expected["cells"][number - 1]["source"] = source
        got = _joined_sources(json.loads(after))
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise NotebookError(f"{path}: the fixed notebook would not be valid JSON ({error}); fix not written") from None
    if got != expected:
        raise NotebookError(f"{path}: writing the fix would change more than the fixed cells; fix not written")


def _joined_sources(notebook: dict[str, Any]) -> dict[str, Any]:
    """*notebook* with each cell's ``source`` as one string, whichever of the two layouts it was stored in."""
    for cell in notebook["cells"]:
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(cell["source"])
    return notebook
