"""graphmend-lint findings as LSP diagnostics.

Every finding is an error or a warning the way the command line treats it:
a syntax error (GM001) stops linting the file, so it is an error; a graph
break is a warning, since the program still runs, only slower. The code links
to the rule's page, where the editor shows it as a clickable code.
"""

from __future__ import annotations

from lsprotocol import types

from graphmend_lint.diagnostics import Applicability, Diagnostic
from graphmend_lint.docs import rule_page_url
from graphmend_lint.pipeline import SYNTAX_ERROR_CODE
from graphmend_lint.rules import rule_by_code
from graphmend_lint.server.positions import lsp_range
from graphmend_lint.source import SourceFile

SOURCE = "graphmend-lint"


def severity(diagnostic: Diagnostic) -> types.DiagnosticSeverity:
    if diagnostic.code == SYNTAX_ERROR_CODE:
        return types.DiagnosticSeverity.Error
    return types.DiagnosticSeverity.Warning


def fix_label(diagnostic: Diagnostic) -> str | None:
    """How the finding's fix is applied, as the code action and the message name it (None: no fix to apply)."""
    if diagnostic.fix is None or diagnostic.fix.applicability is Applicability.DISPLAY_ONLY:
        return None
    return "unsafe" if diagnostic.fix.applicability is Applicability.UNSAFE else "safe"


def to_lsp_diagnostic(source: SourceFile, diagnostic: Diagnostic, encoding: str) -> types.Diagnostic:
    rule = rule_by_code(diagnostic.code)
    url = rule_page_url(rule) if rule is not None else None
    return types.Diagnostic(
        range=lsp_range(source, diagnostic.start, diagnostic.end, encoding),
        message=diagnostic.message,
        severity=severity(diagnostic),
        code=diagnostic.code,
        code_description=types.CodeDescription(href=url) if url else None,
        source=SOURCE,
        data={"fix": fix_label(diagnostic)},
    )
