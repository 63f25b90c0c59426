"""Find the libcst node that an astroid node's position names.

astroid is for meaning, libcst for faithful rewriting (comments, spacing and
quotes survive). The two trees are matched by source range, never by walking
both in parallel. Both sides speak the tool's own positions: 1-based lines and
0-based *character* columns (``FileAnalysis.start_of``/``end_of`` already
converted astroid's byte columns; libcst counts characters).

libcst's ``PositionProvider`` ranges, like ``ast``'s, exclude the parentheses
around an expression and a function's decorators, so expressions and simple
statements match exactly (:meth:`CstIndex.node_at`); for the rest,
:meth:`CstIndex.smallest_around` finds the smallest node of a type holding a
range.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from graphmend_lint.diagnostics import Position

NodeT = TypeVar("NodeT", bound=cst.CSTNode)
Span = tuple[Position, Position]


def _within(inner: Span, outer: Span) -> bool:
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def _span(code_range: CodeRange, line_offset: int) -> Span:
    return (
        Position(code_range.start.line + line_offset, code_range.start.column),
        Position(code_range.end.line + line_offset, code_range.end.column),
    )


@dataclass
class CstIndex:
    """A parsed libcst module (a whole file or one part of it) plus position lookups."""

    wrapper: MetadataWrapper
    spans: Mapping[cst.CSTNode, Span]
    line_offset: int = 0
    _by_span: dict[Span, list[cst.CSTNode]] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, text: str, line_offset: int = 0) -> CstIndex:
        """Parse *text*; raises ``libcst.ParserSyntaxError`` like libcst does.

        *text* may be one part of a file (see ``FileAnalysis.cst_around``)
        whose first line is the file's line ``line_offset + 1``: positions are
        reported in the file's lines, so callers never know that only part of
        the file was parsed (libcst costs about a second per 2,000 lines here).
        """
        wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
        spans = {
            node: _span(code_range, line_offset) for node, code_range in wrapper.resolve(PositionProvider).items()
        }
        by_span: dict[Span, list[cst.CSTNode]] = defaultdict(list)
        for node, span in spans.items():
            by_span[span].append(node)
        return cls(wrapper, spans, line_offset, dict(by_span))

    @property
    def module(self) -> cst.Module:
        return self.wrapper.module

    def span(self, node: cst.CSTNode) -> Span:
        """Where *node* is in the source (KeyError for a node built after parsing)."""
        return self.spans[node]

    def node_at(self, start: Position, end: Position, node_type: type[NodeT]) -> NodeT | None:
        """The node of *node_type* spanning exactly ``start..end`` (the outermost of equal spans)."""
        exact = [n for n in self._by_span.get((start, end), ()) if isinstance(n, node_type)]
        return exact[-1] if exact else None  # parents come after their children

    def smallest_around(self, start: Position, end: Position, node_type: type[NodeT]) -> NodeT | None:
        """The smallest node of *node_type* whose range holds ``start..end``."""
        best: NodeT | None = None
        for node, span in self.spans.items():
            inside = isinstance(node, node_type) and span[0] <= start and end <= span[1]
            if inside and (best is None or _within(span, self.spans[best])):
                best = node
        return best

    def enclosing_function(self, position: Position) -> cst.FunctionDef | None:
        """The innermost ``def`` whose range (the ``def`` keyword on) holds *position*."""
        return self.smallest_around(position, position, cst.FunctionDef)

    def printed_instead(self, old: cst.CSTNode, new: cst.CSTNode) -> str | None:
        """The text that takes *old*'s place when the parsed text is printed with *new* instead.

        ``None`` when the rest of the text does not print back unchanged.
        """
        start, end = self.spans[old]
        text = self.module.code
        line_starts = [0]
        for line in text.splitlines(keepends=True):
            line_starts.append(line_starts[-1] + len(line))
        first = line_starts[start.line - 1 - self.line_offset] + start.col
        last = line_starts[end.line - 1 - self.line_offset] + end.col
        code = self.module.deep_replace(old, new).code
        prefix, suffix = text[:first], text[last:]
        if not (code.startswith(prefix) and code.endswith(suffix)):
            return None
        return code[len(prefix) : len(code) - len(suffix)]

    def code(self, node: cst.CSTNode) -> str:
        """Source text of *node* as this module would print it (indentation of a block is relative)."""
        return self.module.code_for_node(node)

    def render_indented(self, statement: cst.BaseCompoundStatement, indent: str) -> str | None:
        """*statement*'s code as it prints inside blocks indented by *indent*, or ``None``.

        ``Module.code_for_node`` prints a nested block as if it stood at
        column 0; printing the whole module instead costs a full tree walk
        (about 0.5 s for a 2,000-line transformers file). This seeds libcst's
        code generator with the enclosing indentation. It uses libcst's
        internal ``CodegenState``: callers check the result against the
        original text and fall back to printing the module when it is
        ``None`` or wrong.
        """
        try:
            from libcst._nodes.internal import CodegenState
        except ImportError:  # pragma: no cover - a libcst that moved its internals
            return None
        state = CodegenState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            indent_tokens=[indent] if indent else [],
        )
        statement.with_changes(leading_lines=(), decorators=())._codegen(state)
        return "".join(state.tokens)

