"""Positions between graphmend-lint and the protocol.

Inside the tool lines are 1-based and columns count characters; LSP lines are
0-based and columns count code units of the encoding negotiated at
``initialize`` (UTF-16 unless the client offers another). A column past a
non-BMP character (an emoji in a string) differs between the two, so every
position crossing the boundary goes through here. Lines are split the way
:class:`~graphmend_lint.source.SourceFile` splits them (``\\n``, ``\\r\\n``,
``\\r``), which is also the protocol's definition; ``str.splitlines`` is not.
"""

from __future__ import annotations

from lsprotocol import types

from graphmend_lint.diagnostics import Position
from graphmend_lint.source import SourceFile


def _units(text: str, encoding: str) -> int:
    """Length of *text* in the code units of *encoding*."""
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8"))
    if encoding == types.PositionEncodingKind.Utf32:
        return len(text)
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def to_lsp(source: SourceFile, position: Position, encoding: str) -> types.Position:
    """The protocol's position of a tool position (clamped to the text, as editors expect)."""
    line_count = len(source.lines)
    if position.line > line_count:
        return types.Position(line=line_count - 1, character=_units(source.line(line_count), encoding))
    text = source.line(position.line)
    return types.Position(line=max(position.line, 1) - 1, character=_units(text[: position.col], encoding))


def from_lsp(source: SourceFile, position: types.Position, encoding: str) -> Position:
    """The tool's position of a protocol position; a column inside a character rounds up past it."""
    text = source.line(position.line + 1)
    units = 0
    for column, char in enumerate(text):
        if units >= position.character:
            return Position(position.line + 1, column)
        units += _units(char, encoding)
    return Position(position.line + 1, len(text))


def lsp_range(source: SourceFile, start: Position, end: Position, encoding: str) -> types.Range:
    return types.Range(start=to_lsp(source, start, encoding), end=to_lsp(source, end, encoding))


def _position_at(source: SourceFile, offset: int) -> Position:
    """The tool position of a character offset into ``source.text``."""
    before = SourceFile(source.text[:offset])
    last = len(before.lines)
    return Position(last, len(before.line(last)))


def minimal_edit(source: SourceFile, new_text: str, encoding: str) -> types.TextEdit | None:
    """One edit that turns ``source.text`` into *new_text*: the span between their common prefix and suffix.

    A fix touches a few lines; replacing only those keeps the editor's cursor,
    folds and undo history where they were. None when nothing changes.
    """
    old_text = source.text
    if old_text == new_text:
        return None
    limit = min(len(old_text), len(new_text))
    prefix = 0
    while prefix < limit and old_text[prefix] == new_text[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old_text[-1 - suffix] == new_text[-1 - suffix]:
        suffix += 1
    # Never cut a \r\n pair: the \r alone is a line break too, so the edit's position would name another line.
    if _inside_crlf(old_text, prefix):
        prefix -= 1
    if _inside_crlf(old_text, len(old_text) - suffix):
        suffix -= 1
    start, end = _position_at(source, prefix), _position_at(source, len(old_text) - suffix)
    return types.TextEdit(
        range=lsp_range(source, start, end, encoding), new_text=new_text[prefix : len(new_text) - suffix]
    )


def _inside_crlf(text: str, offset: int) -> bool:
    return 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n"
