"""``graphmend-lint server`` end to end: pygls's own LSP client drives the real entry point over stdio.

Each test starts ``python -m graphmend_lint server`` in a subprocess, as an
editor would, and checks what comes back on the wire: published diagnostics,
hover text and code actions, then a clean ``shutdown``/``exit``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from conftest import REPO, write
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from graphmend_lint.docs import docstring_sections
from graphmend_lint.rules import rule_by_code
from graphmend_lint.server.actions import FIX_ALL_KIND

#: A print whose fix is unsafe (the guard: ``y.data`` may not suit the print op) and a tensor branch whose
#: fix (``torch.where``) is safe, both in torch.compile scope.
PROGRAM = """import torch


@torch.compile
def step(x):
    y = x * 2
    print("y:", y.data)
    if y.sum() > 0:
        y = y - 1
    return y.relu()
"""
PRINT_LINE, BRANCH_LINE = 6, 7  # 0-based, as LSP counts
TIMEOUT = 60


class Editor:
    """An LSP client that keeps every publishDiagnostics notification, as an editor's problems list would."""

    def __init__(self) -> None:
        self.client = LanguageClient("graphmend-lint-tests", "1")
        self.published: asyncio.Queue[types.PublishDiagnosticsParams] = asyncio.Queue()
        self.messages: list[types.ShowMessageParams] = []

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            self.published.put_nowait(params)

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def shown(params: types.ShowMessageParams) -> None:
            self.messages.append(params)

    async def diagnostics(self, uri: str, version: int | None) -> list[types.Diagnostic]:
        """The next diagnostics published for *uri* at *version*."""
        while True:
            params = await asyncio.wait_for(self.published.get(), TIMEOUT)
            if params.uri == uri and params.version == version:
                return list(params.diagnostics)

    def open(self, uri: str, text: str) -> None:
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
        )

    async def actions(
        self, uri: str, cursor: types.Position, listed: list[types.Diagnostic], only: list[str] | None = None
    ) -> list[types.CodeAction]:
        """The code actions at *cursor*, with *listed* diagnostics in the context as editors send them."""
        params = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=types.Range(cursor, cursor),
            context=types.CodeActionContext(diagnostics=listed, only=only),
        )
        result = await asyncio.wait_for(self.client.text_document_code_action_async(params), TIMEOUT)
        return [action for action in result or [] if isinstance(action, types.CodeAction)]


@asynccontextmanager
async def editor(root: Path) -> AsyncIterator[Editor]:
    """A server started as an editor starts it, initialized; shut down and exited cleanly afterwards."""
    session = Editor()
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    await session.client.start_io(sys.executable, "-m", "graphmend_lint", "server", cwd=str(root), env=environment)
    result = await asyncio.wait_for(
        session.client.initialize_async(
            types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=root.as_uri())
        ),
        TIMEOUT,
    )
    assert result.server_info is not None and result.server_info.name == "graphmend-lint"
    session.client.initialized(types.InitializedParams())
    yield session
    await asyncio.wait_for(session.client.shutdown_async(None), TIMEOUT)
    session.client.exit(None)
    server = session.client._server
    assert server is not None
    assert await asyncio.wait_for(server.wait(), TIMEOUT) == 0
    await session.client.stop()


def run(scenario: Callable[[Path], Awaitable[None]], root: Path) -> None:
    asyncio.run(scenario(root))


def apply(text: str, edits: list[types.TextEdit]) -> str:
    """*text* after non-overlapping LSP edits (lines split on \\n; the test texts are ASCII)."""
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        return sum(len(line) + 1 for line in lines[: position.line]) + position.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


def edits_of(action: types.CodeAction, uri: str) -> list[types.TextEdit]:
    assert action.edit is not None and action.edit.changes is not None
    return list(action.edit.changes[uri])


def test_diagnostics_on_open_change_and_save(project: Path) -> None:
    path = write(project, "step.py", PROGRAM)
    uri = path.as_uri()

    async def scenario(root: Path) -> None:
        async with editor(root) as session:
            session.open(uri, PROGRAM)
            found = await session.diagnostics(uri, 1)
            assert [(d.code, d.range.start.line, d.range.start.character, d.range.end.character) for d in found] == [
                ("GM201", PRINT_LINE, 4, 23),
                ("GM101", BRANCH_LINE, 7, 18),
            ]
            assert {d.source for d in found} == {"graphmend-lint"}
            assert {d.severity for d in found} == {types.DiagnosticSeverity.Warning}
            assert found[0].code_description is not None
            assert found[0].code_description.href.endswith("/docs/rules/GM201.md")

            # The editor deletes the print line; the server lints the in-memory text, not the file.
            session.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                    content_changes=[
                        types.TextDocumentContentChangePartial(
                            range=types.Range(types.Position(PRINT_LINE, 0), types.Position(PRINT_LINE + 1, 0)),
                            text="",
                        )
                    ],
                )
            )
            changed = await session.diagnostics(uri, 2)
            assert [(d.code, d.range.start.line) for d in changed] == [("GM101", BRANCH_LINE - 1)]

            # Saving re-reads the config: ignoring GM101 in pyproject.toml takes effect on the next save.
            (root / "pyproject.toml").write_text('[tool.graphmend-lint]\nignore = ["GM101"]\n')
            session.client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
            assert await session.diagnostics(uri, 2) == []

    run(scenario, project)


def test_hover_shows_the_message_and_why(project: Path) -> None:
    path = write(project, "step.py", PROGRAM)
    uri = path.as_uri()
    why = docstring_sections(rule_by_code("GM201"))["Why is this bad"]

    async def scenario(root: Path) -> None:
        async with editor(root) as session:
            session.open(uri, PROGRAM)
            await session.diagnostics(uri, 1)
            hover = await session.client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(PRINT_LINE, 6))
            )
            assert hover is not None and isinstance(hover.contents, types.MarkupContent)
            text = hover.contents.value
            assert "`print()` in compiled code causes a graph break" in text
            assert "Why Dynamo breaks" in text and why in text
            assert "GM101" not in text
            nothing = await session.client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 0))
            )
            assert nothing is None

    run(scenario, project)


def test_code_actions_mark_unsafe_fixes_and_fix_all_applies_safe_ones_only(project: Path) -> None:
    path = write(project, "step.py", PROGRAM)
    uri = path.as_uri()

    async def scenario(root: Path) -> None:
        async with editor(root) as session:
            session.open(uri, PROGRAM)
            printed, branch = await session.diagnostics(uri, 1)

            # Neovim's code_action(): the cursor at the start of the line, that line's diagnostics in the context.
            [print_fix] = await session.actions(uri, types.Position(PRINT_LINE, 0), [printed], [types.CodeActionKind.QuickFix])
            assert print_fix.title.startswith("GM201: ") and print_fix.title.endswith("(unsafe)")
            assert not print_fix.is_preferred
            assert [d.code for d in print_fix.diagnostics or []] == ["GM201"]
            guarded = apply(PROGRAM, edits_of(print_fix, uri))
            assert '    if not torch.compiler.is_compiling():\n        print("y:", y.data)\n' in guarded

            # A cursor inside the finding, no context: the quick fix, then "fix all" (this file has a safe fix).
            branch_fix, fix_all = await session.actions(uri, types.Position(BRANCH_LINE, 10), [])
            assert fix_all.kind == FIX_ALL_KIND
            assert branch_fix.title == "GM101: Select with `torch.where` instead of branching"
            assert branch_fix.is_preferred
            assert "    y = torch.where(y.sum() > 0, y - 1, y)\n" in apply(PROGRAM, edits_of(branch_fix, uri))

            # "Fix all", as an editor asks for it on save: the safe GM101 fix only, the print stays.
            assert [a.kind for a in await session.actions(uri, types.Position(0, 0), [], only=["source.fixAll"])] == [
                FIX_ALL_KIND
            ]
            fixed = apply(PROGRAM, edits_of(fix_all, uri))
            assert fixed == PROGRAM.replace("    if y.sum() > 0:\n        y = y - 1\n", "    y = torch.where(y.sum() > 0, y - 1, y)\n")
            assert fixed == run_cli_fix(root, PROGRAM)

    run(scenario, project)


def run_cli_fix(root: Path, text: str) -> str:
    """What ``graphmend-lint --fix`` (safe fixes only) makes of *text*, read from stdin."""
    completed = subprocess.run(
        [sys.executable, "-m", "graphmend_lint", "--fix", "--stdin-filename", str(root / "step.py")],
        input=text, capture_output=True, text=True, cwd=root, timeout=TIMEOUT,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return completed.stdout


def test_positions_count_utf16_units_past_an_emoji(project: Path) -> None:
    """LSP columns count UTF-16 code units by default: an emoji before a finding shifts it by two, not one."""
    text = PROGRAM.replace('print("y:", y.data)', 'print("😋", y.data)')
    path = write(project, "step.py", text)
    uri = path.as_uri()

    async def scenario(root: Path) -> None:
        async with editor(root) as session:
            session.open(uri, text)
            [printed, _] = await session.diagnostics(uri, 1)
            assert (printed.range.start.character, printed.range.end.character) == (4, 23)

    run(scenario, project)


def test_a_broken_config_is_shown_not_crashed_on(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.graphmend-lint]\nselect = ["GM999"]\n')
    path = write(project, "step.py", PROGRAM)
    uri = path.as_uri()

    async def scenario(root: Path) -> None:
        async with editor(root) as session:
            session.open(uri, PROGRAM)
            assert await session.diagnostics(uri, 1) == []
            [message] = session.messages
            assert message.type == types.MessageType.Error
            assert "pyproject.toml" in message.message and "GM999" in message.message

    run(scenario, project)


def test_server_without_pygls_says_how_to_install_it(tmp_path: Path) -> None:
    block = (
        "import sys\n"
        "class NoPygls:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pygls', 'lsprotocol'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, NoPygls())\n"
        "from graphmend_lint.cli import main\n"
        "raise SystemExit(main(['server']))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", block], capture_output=True, text=True, cwd=tmp_path, timeout=TIMEOUT,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert completed.returncode == 2
    assert "pip install 'graphmend-lint[server]'" in completed.stderr
    assert "Traceback" not in completed.stderr
