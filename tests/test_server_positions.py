"""Positions and edits at the language server's edge: UTF-16 columns, \\r\\n pairs, minimal edits."""

from __future__ import annotations

import pytest
from lsprotocol import types

from graphmend_lint.diagnostics import Position
from graphmend_lint.server.positions import from_lsp, minimal_edit, to_lsp
from graphmend_lint.source import SourceFile

UTF8, UTF16, UTF32 = (types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16, types.PositionEncodingKind.Utf32)


@pytest.mark.parametrize(("encoding", "units"), [(UTF16, 12), (UTF8, 14), (UTF32, 11)])
def test_a_column_after_an_emoji_counts_the_encodings_units(encoding: str, units: int) -> None:
    source = SourceFile('x = 1\nprint("😋", y)\n')
    after_emoji = Position(2, 11)  # the `y`: 11 characters in
    assert to_lsp(source, after_emoji, encoding) == types.Position(line=1, character=units)
    assert from_lsp(source, types.Position(line=1, character=units), encoding) == after_emoji


def test_positions_past_the_end_are_clamped() -> None:
    source = SourceFile("a = 1\n")
    assert to_lsp(source, Position(5, 0), UTF16) == types.Position(line=1, character=0)
    assert from_lsp(source, types.Position(line=0, character=99), UTF16) == Position(1, 5)


def _apply(source: SourceFile, edit: types.TextEdit) -> str:
    start = source.offset(from_lsp(source, edit.range.start, UTF16))
    end = source.offset(from_lsp(source, edit.range.end, UTF16))
    return source.text[:start] + edit.new_text + source.text[end:]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("a\nb\nc\n", "a\nB\nc\n"),
        ("if x:\r\n    y\r\nz\r\n", "y = where(x)\r\nz\r\n"),
        ("a\r\nb\r\n", "a\r\nc\r\nb\r\n"),  # an insertion right after a \r\n: the edit must not split it
        ("a\r\nb", "a\r\n"),
        ("😋 = 1\n", "😋 = 2\n"),
    ],
)
def test_minimal_edit_reproduces_the_new_text_and_never_splits_crlf(old: str, new: str) -> None:
    source = SourceFile(old)
    edit = minimal_edit(source, new, UTF16)
    assert edit is not None
    assert _apply(source, edit) == new
    for position in (edit.range.start, edit.range.end):
        offset = source.offset(from_lsp(source, position, UTF16))
        assert old[offset - 1 : offset + 1] != "\r\n"


def test_minimal_edit_replaces_only_what_changed() -> None:
    edit = minimal_edit(SourceFile("a\nb\nc\n"), "a\nB\nc\n", UTF16)
    assert edit == types.TextEdit(range=types.Range(types.Position(1, 0), types.Position(1, 1)), new_text="B")


def test_no_change_is_no_edit() -> None:
    assert minimal_edit(SourceFile("a\n"), "a\n", UTF16) is None
