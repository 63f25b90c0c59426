"""Guard a statement so that it only runs eagerly.

``if not torch.compiler.is_compiling():`` is constant-folded by Dynamo, so the
guarded statement vanishes from the graph and eager behaviour is unchanged.
It is the idiom transformers itself uses (``is_torchdynamo_compiling()``).
"""

from __future__ import annotations

import io
import tokenize

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix, Position

#: Tokens holding string text (3.12 splits f-strings into START/MIDDLE/END).
_STRING_TOKENS = frozenset({tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)})
GUARD_MESSAGE = "Run only when not compiling (`if not torch.compiler.is_compiling():`)"


def torch_alias(analysis: FileAnalysis) -> str | None:
    """The local name bound to the ``torch`` module, if the file imports it."""
    for local, target in analysis.imports.aliases.items():
        if target == "torch":
            return local
    return None


def _owns_its_lines(analysis: FileAnalysis, statement: nodes.NodeNG) -> bool:
    """True when nothing but whitespace or a comment shares the statement's lines."""
    source = analysis.source
    start, end = analysis.start_of(statement), analysis.end_of(statement)
    before = source.line(start.line)[: start.col]
    after = source.line(end.line)[end.col :].strip()
    return not before.strip() and (not after or after.startswith("#"))


def _spans_string_lines(analysis: FileAnalysis, statement: nodes.NodeNG) -> bool:
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


def guard_statement(analysis: FileAnalysis, statement: nodes.NodeNG) -> Fix | None:
    """Wrap *statement* in an is-compiling guard, or ``None`` when that isn't clean."""
    torch_name = torch_alias(analysis)
    if torch_name is None or not _owns_its_lines(analysis, statement) or _spans_string_lines(analysis, statement):
        return None
    start, end = analysis.start_of(statement), analysis.end_of(statement)
    indent = analysis.source.line(start.line)[: start.col]
    lines = [analysis.source.line(n) for n in range(start.line, end.line + 1)]
    lines[-1] = lines[-1][: end.col]
    lines[0] = lines[0][start.col :]
    body = "\n".join([lines[0], *(("    " + line) if line.strip() else line for line in lines[1:])])
    content = f"if not {torch_name}.compiler.is_compiling():\n{indent}    {body}"
    edit = Edit(Position(start.line, start.col), Position(end.line, end.col), content)
    return Fix(edits=(edit,), applicability=Applicability.UNSAFE, message=GUARD_MESSAGE)
