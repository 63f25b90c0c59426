"""Code actions: a quick fix per fixable finding, and "fix all" with the safe fixes only.

Both go through the command line's own fixing: a quick fix is
:func:`graphmend_lint.fixer.apply_fixes` on that one finding, "fix all" is
:func:`graphmend_lint.pipeline.fix` with unsafe fixes off, exactly
``graphmend-lint --fix``. Unsafe fixes may change what the program does
(see each rule's *Fix safety*), so they are offered one by one, marked
"(unsafe)", and never applied by "fix all", which editors run on save.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.fixer import apply_fixes
from graphmend_lint.server.documents import LintedDocument
from graphmend_lint.server.findings import fix_label, to_lsp_diagnostic
from graphmend_lint.server.positions import minimal_edit

FIX_ALL_KIND = "source.fixAll.graphmend-lint"
QUICK_FIX_KIND = types.CodeActionKind.QuickFix


def wants(only: Sequence[str] | None, kind: str) -> bool:
    """Whether a request limited to the kinds *only* asks for *kind* (``source`` asks for ``source.fixAll.x``)."""
    return only is None or any(kind == wanted or kind.startswith(wanted + ".") for wanted in only)


def _edit(uri: str, document: LintedDocument, new_text: str, encoding: str) -> types.WorkspaceEdit | None:
    edit = minimal_edit(document.source, new_text, encoding)
    return types.WorkspaceEdit(changes={uri: [edit]}) if edit is not None else None


def quick_fix(uri: str, document: LintedDocument, diagnostic: Diagnostic, encoding: str) -> types.CodeAction | None:
    """The action applying this finding's fix alone; None when it has none an editor may apply."""
    label = fix_label(diagnostic)
    if label is None or diagnostic.fix is None:
        return None
    new_text, applied = apply_fixes(document.source, [diagnostic])
    edit = _edit(uri, document, new_text, encoding) if applied else None
    if edit is None:
        return None
    suffix = " (unsafe)" if label == "unsafe" else ""
    return types.CodeAction(
        title=f"{diagnostic.code}: {diagnostic.fix.message}{suffix}",
        kind=QUICK_FIX_KIND,
        diagnostics=[to_lsp_diagnostic(document.source, diagnostic, encoding)],
        is_preferred=label == "safe",
        edit=edit,
    )


def fix_all(uri: str, document: LintedDocument, encoding: str) -> types.CodeAction | None:
    """The action applying every safe fix, as ``graphmend-lint --fix``; None when there is nothing to fix."""
    if not any(fix_label(d) == "safe" for d in document.diagnostics):
        return None
    edit = _edit(uri, document, document.fixed_text(unsafe=False), encoding)
    if edit is None:
        return None
    return types.CodeAction(title="graphmend-lint: fix all safe fixes", kind=FIX_ALL_KIND, edit=edit)


def code_actions(
    uri: str, document: LintedDocument, selected: Sequence[Diagnostic], only: Sequence[str] | None, encoding: str
) -> list[types.CodeAction]:
    """The actions for a request: quick fixes for the *selected* findings, then "fix all"."""
    actions: list[types.CodeAction | None] = []
    if wants(only, QUICK_FIX_KIND):
        actions.extend(quick_fix(uri, document, d, encoding) for d in selected)
    if wants(only, FIX_ALL_KIND):
        actions.append(fix_all(uri, document, encoding))
    return [action for action in actions if action is not None]
