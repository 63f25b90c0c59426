"""Guard statements so that they only run eagerly.

``if not torch.compiler.is_compiling():`` is constant-folded by Dynamo, so the
guarded statements vanish from the graph: no break is logged and
``fullgraph=True`` passes (measured on torch 2.13). Eager behaviour is
unchanged. It is the idiom transformers itself uses
(``is_torchdynamo_compiling()``).

The edit is made where the statements are: a run of consecutive statements
gets one guard, indented one level deeper. A statement holding a string that
spans lines (a triple-quoted message) cannot be re-indented without changing
the string, so it is guarded on its own line instead:
``if not torch.compiler.is_compiling(): logger.warning(\"\"\"...\"\"\")``.
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Sequence

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix, Position
from graphmend_lint.fixes.torch_name import torch_name_at

#: Tokens holding string text (3.12 splits f-strings into START/MIDDLE/END).
_STRING_TOKENS = frozenset({tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)})
GUARD_MESSAGE = "Run only when not compiling (`if not torch.compiler.is_compiling():`)"


def can_guard(analysis: FileAnalysis, statement: nodes.NodeNG) -> bool:
    """Nothing but whitespace or a comment shares the statement's lines."""
    source = analysis.source
    start, end = analysis.start_of(statement), analysis.end_of(statement)
    before = source.line(start.line)[: start.col]
    after = source.line(end.line)[end.col :].strip()
    return not before.strip() and (not after or after.startswith("#"))


def spans_string_lines(analysis: FileAnalysis, statement: nodes.NodeNG) -> bool:
    """Re-indenting would change a string token that spans lines (a triple-quoted one).

    Asked of the tokens, because astroid merges implicit concatenation
    (``"a "`` and ``"b"`` on two lines, how transformers writes its warnings)
    into one constant that spans lines although re-indenting it is harmless.
    """
    start, end = analysis.start_of(statement), analysis.end_of(statement)
    text = "\n".join(analysis.source.line(n) for n in range(start.line, end.line + 1))
    try:
        return any(
            token.type in _STRING_TOKENS and token.start[0] != token.end[0]
            for token in tokenize.generate_tokens(io.StringIO(text).readline)
        )
    except (tokenize.TokenError, SyntaxError):
        return True


def guard_statements(
    analysis: FileAnalysis,
    statements: Sequence[nodes.NodeNG],
    applicability: Applicability,
    message: str = GUARD_MESSAGE,
) -> Fix | None:
    """Wrap consecutive sibling *statements* in one is-compiling guard, or ``None`` when that isn't clean."""
    if not statements or not all(can_guard(analysis, statement) for statement in statements):
        return None
    torch = torch_name_at(analysis, statements[0])
    if torch is None:
        return None
    test = f"if not {torch.name}.compiler.is_compiling():"
    start, end = analysis.start_of(statements[0]), analysis.end_of(statements[-1])
    if any(spans_string_lines(analysis, statement) for statement in statements):
        if len(statements) > 1:
            return None
        edit = Edit(start, start, test + " ")
    else:
        edit = Edit(start, end, _block(analysis, test, start, end))
    return Fix(edits=(*torch.edits, edit), applicability=applicability, message=message)


def _block(analysis: FileAnalysis, test: str, start: Position, end: Position) -> str:
    """``test`` followed by the lines from *start* to *end*, one level deeper."""
    indent = analysis.source.line(start.line)[: start.col]
    step = "\t" if indent.startswith("\t") else "    "
    lines = [analysis.source.line(n) for n in range(start.line, end.line + 1)]
    lines[-1] = lines[-1][: end.col]
    lines[0] = indent + lines[0][start.col :]
    body = "\n".join((step + line) if line.strip() else "" for line in lines)
    return f"{test}\n{body}"
