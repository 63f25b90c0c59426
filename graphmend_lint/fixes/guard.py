"""Guard a statement so that it only runs eagerly.

``if not torch.compiler.is_compiling():`` is constant-folded by Dynamo, so the
guarded statement vanishes from the graph and eager behaviour is unchanged.
It is the idiom transformers itself uses (``is_torchdynamo_compiling()``).
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix, Position

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


def _spans_string_lines(statement: nodes.NodeNG) -> bool:
    """Re-indenting would change a string literal that spans lines."""
    return any(
        isinstance(const.value, str) and const.lineno != const.end_lineno
        for const in statement.nodes_of_class(nodes.Const)
    ) or any(s.lineno != s.end_lineno for s in statement.nodes_of_class(nodes.JoinedStr))


def guard_statement(analysis: FileAnalysis, statement: nodes.NodeNG) -> Fix | None:
    """Wrap *statement* in an is-compiling guard, or ``None`` when that isn't clean."""
    torch_name = torch_alias(analysis)
    if torch_name is None or not _owns_its_lines(analysis, statement) or _spans_string_lines(statement):
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
