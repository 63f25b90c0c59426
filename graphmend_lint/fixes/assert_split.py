"""Give a tensor ``assert`` a constant message under ``torch.compile`` only.

Dynamo lowers ``assert <tensor>, "constant"`` to an asynchronous device-side
assert, with no graph break. Any other message (an f-string, a variable)
makes it evaluate the test on the host instead: a data-dependent branch
(GB0170). Splitting the statement on ``torch.compiler.is_compiling()``
keeps the original, message and all, whenever the code runs eagerly, and
hands Dynamo the constant-message form: ``is_compiling()`` is constant-folded,
so the other side is never traced.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Edit, Fix
from graphmend_lint.fixes.guard import can_guard, spans_string_lines
from graphmend_lint.fixes.host_sync import node_text
from graphmend_lint.fixes.torch_name import torch_name_at


def constant_message(message: nodes.NodeNG, text: str) -> str:
    """A string literal standing for *message*: an f-string's template (``"bad {n}"``), else its source text.

    The literal uses the f-string's quote character when it can.
    """
    if not isinstance(message, nodes.JoinedStr):
        return repr(" ".join(text.split()))
    parts = []
    for value in message.values:
        if isinstance(value, nodes.FormattedValue):
            parts.append("{" + value.value.as_string() + "}")
        elif isinstance(value, nodes.Const):
            parts.append(str(value.value))
    literal = repr("".join(parts))
    quote = text.lstrip("fFrR")[:1]
    body = literal[1:-1]
    if quote == '"' and literal[0] == "'" and '"' not in body and "\\'" not in body:
        return f'"{body}"'
    return literal


def split_assert_fix(analysis: FileAnalysis, statement: nodes.Assert) -> Fix | None:
    """``assert c, msg`` → ``if torch.compiler.is_compiling(): assert c, "<template>"`` / ``else: assert c, msg``.

    Unsafe, like GM301's assert fix: eagerly nothing changes (the original
    statement runs, and ``python -O`` still strips both asserts), but under
    ``torch.compile`` a failing check raises ``RuntimeError`` from the async
    assert, with the constant message, instead of ``AssertionError(msg)``.
    """
    if not can_guard(analysis, statement) or spans_string_lines(analysis, statement):
        return None
    torch = torch_name_at(analysis, statement)
    if torch is None:
        return None
    start, end = analysis.start_of(statement), analysis.end_of(statement)
    indent = analysis.source.line(start.line)[: start.col]
    original = node_text(analysis, statement)
    nested = original.replace("\n", "\n    ")
    message = constant_message(statement.fail, node_text(analysis, statement.fail))
    compiled = f"assert {node_text(analysis, statement.test)}, {message}"
    content = (
        f"if {torch.name}.compiler.is_compiling():\n{indent}    {compiled.replace(chr(10), chr(10) + '    ')}\n"
        f"{indent}else:\n{indent}    {nested}"
    )
    return Fix(
        edits=(*torch.edits, Edit(start, end, content)),
        applicability=Applicability.UNSAFE,
        message="Give the assert a constant message when compiling (Dynamo then checks it on the device)",
    )
