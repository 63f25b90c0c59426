"""Decoded source text, and the one place that converts between position systems.

A user's file must come back byte-for-byte identical except where a fix edits
it, so :class:`SourceFile` remembers everything decoding throws away: the
encoding, a UTF-8 byte-order mark and the newline style.
"""

from __future__ import annotations

import codecs
import io
import re
import tokenize
from dataclasses import dataclass
from functools import cached_property

from graphmend_lint.diagnostics import Position

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def normalize_newlines(text: str, newline: str) -> str:
    """Rewrite every line break in *text* as *newline* (fix content must match the file)."""
    return _LINE_BREAK.sub(newline, text)


class DecodeError(ValueError):
    """The bytes of a file are not text in the encoding the file declares."""


@dataclass(frozen=True)
class SourceFile:
    """A Python source text plus what is needed to write it back faithfully."""

    text: str
    encoding: str = "utf-8"
    bom: bool = False

    @classmethod
    def from_bytes(cls, data: bytes) -> SourceFile:
        """Decode per PEP 263 (BOM, then coding cookie, then UTF-8)."""
        bom = data.startswith(codecs.BOM_UTF8)
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:
            raise DecodeError(str(exc)) from exc
        if encoding == "utf-8-sig":
            encoding = "utf-8"
        payload = data[len(codecs.BOM_UTF8) :] if bom else data
        try:
            text = payload.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise DecodeError(f"cannot decode as {encoding}: {exc}") from exc
        return cls(text=text, encoding=encoding, bom=bom)

    def to_bytes(self, text: str | None = None) -> bytes:
        """Encode *text* (default: this file's text) the way the file was encoded."""
        body = (self.text if text is None else text).encode(self.encoding)
        return codecs.BOM_UTF8 + body if self.bom else body

    @cached_property
    def newline(self) -> str:
        """The file's dominant newline, used for every line a fix inserts."""
        match = _LINE_BREAK.search(self.text)
        return match.group(0) if match else "\n"

    @cached_property
    def lines(self) -> tuple[str, ...]:
        """Lines split the way the parser counts them (not ``str.splitlines``).

        ``str.splitlines`` also breaks on form feeds and other separators,
        which would shift every line number after them.
        """
        return tuple(_LINE_BREAK.split(self.text))

    @cached_property
    def _line_starts(self) -> tuple[int, ...]:
        starts = [0]
        starts.extend(m.end() for m in _LINE_BREAK.finditer(self.text))
        return tuple(starts)

    def line(self, number: int) -> str:
        """The text of 1-based line *number*, without its line break."""
        if 1 <= number <= len(self.lines):
            return self.lines[number - 1]
        return ""

    def offset(self, position: Position) -> int:
        """Character offset into :attr:`text` of a (1-based line, column) position."""
        starts = self._line_starts
        line_index = min(max(position.line, 1), len(starts)) - 1
        return starts[line_index] + position.col

    def char_column(self, line: int, byte_column: int) -> int:
        """Convert a UTF-8 byte column (what ``ast`` and astroid report) to characters.

        libcst, editors and every output format count characters, so every
        position leaving the analysis goes through here exactly once.
        """
        text = self.line(line)
        if text.isascii():
            return byte_column
        return len(text.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore"))
