"""The pygls server: protocol features wired to the linter, nothing else.

Each handler finds the document, converts positions and calls
:mod:`.documents`, :mod:`.hover` or :mod:`.actions`. Linting runs in the
handler itself, so diagnostics are published in the order the edits were
made and hover and code actions always see the last edit's findings.
"""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from graphmend_lint import __version__
from graphmend_lint.config import ConfigError
from graphmend_lint.diagnostics import Diagnostic
from graphmend_lint.server.actions import FIX_ALL_KIND, QUICK_FIX_KIND, code_actions
from graphmend_lint.server.documents import UNSAVED_PATH, DocumentLinter, LintedDocument
from graphmend_lint.server.findings import SOURCE, to_lsp_diagnostic
from graphmend_lint.server.hover import hover_markdown
from graphmend_lint.server.positions import from_lsp, lsp_range


class GraphmendServer(LanguageServer):
    """A language server that remembers the last lint of each open document."""

    def __init__(self) -> None:
        super().__init__(SOURCE, __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.linter = DocumentLinter()

    @property
    def encoding(self) -> str:
        """The position encoding agreed at ``initialize`` (UTF-16 unless the client offered another)."""
        return str(self.workspace.position_encoding or types.PositionEncodingKind.Utf16)

    def lint_and_publish(self, uri: str, *, persist: bool) -> None:
        """Lint the document's current text and publish its findings (none when the config is broken)."""
        document = self.workspace.get_text_document(uri)
        path = to_fs_path(uri) if uri.startswith("file:") else None
        try:
            linted = self.linter.lint(uri, path or UNSAVED_PATH, document.source, persist=persist)
        except ConfigError as error:
            self.linter.forget(uri)
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"{SOURCE}: {error}"))
            self.publish(uri, document.version, [])
            return
        for message in linted.outcome.internal_errors:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=f"{SOURCE}: {message}"))
        self.publish(uri, document.version, [to_lsp_diagnostic(linted.source, d, self.encoding) for d in linted.diagnostics])

    def publish(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics)
        )

    def selected(self, linted: LintedDocument, params: types.CodeActionParams) -> list[Diagnostic]:
        """The findings a code action request is about.

        Those under the selection or cursor, and those the client lists in its
        context: Neovim and VS Code send the diagnostics of the cursor's line
        there while the cursor itself may sit before the finding's column.
        """
        start = from_lsp(linted.source, params.range.start, self.encoding)
        end = from_lsp(linted.source, params.range.end, self.encoding)
        listed = [(d.code, d.range) for d in params.context.diagnostics if d.source == SOURCE]
        under_cursor = linted.overlapping(start, end)
        return [
            d for d in linted.diagnostics
            if d in under_cursor or (d.code, lsp_range(linted.source, d.start, d.end, self.encoding)) in listed
        ]


def build_server() -> GraphmendServer:
    """A server with every feature registered (a fresh one per call, so nothing happens at import)."""
    server = GraphmendServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: GraphmendServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.lint_and_publish(params.text_document.uri, persist=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: GraphmendServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.lint_and_publish(params.text_document.uri, persist=False)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: GraphmendServer, params: types.DidSaveTextDocumentParams) -> None:
        """Saving may follow a change to a config file, so settings are read again and the text cached."""
        ls.lint_and_publish(params.text_document.uri, persist=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: GraphmendServer, params: types.DidCloseTextDocumentParams) -> None:
        """A closed file's findings leave the problems list, as in ruff's server."""
        ls.linter.forget(params.text_document.uri)
        ls.publish(params.text_document.uri, None, [])

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: GraphmendServer, params: types.HoverParams) -> types.Hover | None:
        linted = ls.linter.get(params.text_document.uri)
        if linted is None:
            return None
        text = hover_markdown(linted.at(from_lsp(linted.source, params.position, ls.encoding)))
        if text is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[QUICK_FIX_KIND, FIX_ALL_KIND], resolve_provider=False),
    )
    def code_action(ls: GraphmendServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        linted = ls.linter.get(uri)
        if linted is None:
            return []
        return code_actions(uri, linted, ls.selected(linted, params), params.context.only, ls.encoding)

    return server


def serve() -> None:
    """Speak LSP on stdin/stdout until the client sends ``exit``."""
    build_server().start_io()
