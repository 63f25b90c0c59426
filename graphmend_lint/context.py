"""What a rule sees of one file: the trees, the compile scope and the value oracle.

:class:`FileAnalysis` is built once per file by the engine and shared by all
rules; :class:`RuleContext` is a rule's view of it, with its options and a
``report`` helper that turns astroid nodes into character-accurate positions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from astroid import nodes

from graphmend_lint.analysis.astroid_tree import def_position
from graphmend_lint.analysis.break_sites import break_position
from graphmend_lint.analysis.conditions import snippet
from graphmend_lint.analysis.gates import gate_note
from graphmend_lint.analysis.imports import ImportTable
from graphmend_lint.analysis.scope import ScopeFacts, Seed, TracedFunction
from graphmend_lint.analysis.values import ValueOracle
from graphmend_lint.config import Settings
from graphmend_lint.diagnostics import Applicability, Diagnostic, Fix, Position
from graphmend_lint.source import SourceFile

if TYPE_CHECKING:
    from graphmend_lint.rules.base import Rule

NodeT = TypeVar("NodeT", bound=nodes.NodeNG)
T = TypeVar("T")
MatchT = TypeVar("MatchT")
#: Why a fix on a tensor of some paths only is shown and not applied.
PARTIAL_NOTE = " (shown only: on some paths the value is a Python value, which the rewrite does not accept)"


@dataclass
class FileAnalysis:
    """Everything known about one file once analysis is done."""

    path: str
    source: SourceFile
    module: nodes.Module
    imports: ImportTable
    scope: ScopeFacts
    values: ValueOracle
    settings: Settings
    #: Lints another text as this file (same path), for fixes that prove an edit by trial.
    #: Passed in by the pipeline so that no rule imports the pipeline that imports it.
    lint_trial: Callable[[SourceFile, Settings, tuple[Seed, ...]], list[Diagnostic]]
    _traced: list[tuple[nodes.FunctionDef, TracedFunction]] | None = field(default=None, repr=False)
    _shared: dict[str, Any] = field(default_factory=dict, repr=False)

    def traced_functions(self) -> list[tuple[nodes.FunctionDef, TracedFunction]]:
        """astroid function nodes whose bodies torch.compile traces."""
        if self._traced is None:
            self._traced = []
            for function in _function_definitions(self.module):
                traced = self.scope.function_at(*def_position(function))
                if traced is not None:
                    self._traced.append((function, traced))
        return self._traced

    def scope_seeds(self) -> tuple[Seed, ...]:
        """This file's traced functions as seeds: a trial lint of an edited text then has the same
        compile scope however this file's was reached (a decorator, a call site in another file)."""
        return tuple(self._seed(f) for f in self.scope.functions)

    def _seed(self, traced: TracedFunction) -> Seed:
        return Seed(f"{self.imports.module}.{traced.qualname}", False, traced.chain)

    def trial_around(self, node: nodes.NodeNG, candidate: SourceFile, settings: Settings) -> list[Diagnostic]:
        """Lint *candidate*, an edited text of this file, for findings about the function that holds *node*.

        That function is the trial's only seed, under ``compiled`` scope: what it calls is reached
        from it, so its scope is the same however this file's was reached, and the rest of the file
        (under ``--scope modules``, every module) is not analysed. A node outside any traced function
        (module level) falls back to every traced function of the file.
        """
        function = node.frame()
        traced = self.scope.function_at(*def_position(function)) if isinstance(function, nodes.FunctionDef) else None
        if traced is None:
            return self.lint_trial(candidate, settings, self.scope_seeds())
        return self.lint_trial(candidate, replace(settings, scope="compiled"), (self._seed(traced),))

    def shared(self, key: str, compute: Callable[[], T]) -> T:
        """A result several rules need identically (GM201-GM204 classify the same calls), computed once per file."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]  # type: ignore[no-any-return]

    def traced_nodes(self, *types: type[NodeT]) -> Iterator[tuple[NodeT, TracedFunction]]:
        """Nodes of *types* in traced code, in source order, each with the function that put it in scope.

        Nested functions are visited on their own when they are in scope, so
        each node is yielded once; a nested ``class`` statement is yielded (it
        runs in the traced code) but its body is not; eager-only branches are
        skipped.
        The traced code is walked once per file and indexed by node class, so
        a dozen rules asking for their node types cost one walk, not twelve.
        """
        wanted = [entries for cls, entries in self._traced_index.items() if issubclass(cls, types)]
        merged = wanted[0] if len(wanted) == 1 else sorted(entry for entries in wanted for entry in entries)
        for _, node, traced in merged:
            yield node, traced

    @cached_property
    def _traced_index(self) -> dict[type, list[tuple[int, nodes.NodeNG, TracedFunction]]]:
        index: dict[type, list[tuple[int, nodes.NodeNG, TracedFunction]]] = {}
        order = 0
        check_eager = bool(self.scope.eager_only)
        for function, traced in self.traced_functions():
            stack: list[nodes.NodeNG] = list(reversed(function.body))
            while stack:
                node = stack.pop()
                if isinstance(node, nodes.FunctionDef):
                    continue
                if check_eager and node.is_statement and self.scope.is_eager_only(node.lineno):
                    continue
                index.setdefault(type(node), []).append((order, node, traced))
                order += 1
                if not isinstance(node, nodes.ClassDef):  # the statement runs here; its body is its own scope
                    stack.extend(reversed(self._compiled_children(node)))
        return index

    def _compiled_children(self, node: nodes.NodeNG) -> list[nodes.NodeNG]:
        """The children of *node* that run under compile: not the arm of ``a if torch.jit.is_tracing() else b``
        Dynamo folds away, nor the operands after ``not is_torchdynamo_compiling() and ...`` decides, nor
        the arm (or the later operands) of a guard on a parameter that no call of the function takes
        (WeNet's ``max_len if max_len > 0 else lengths.max().item()``, every call passing a size:
        :meth:`ValueOracle.fixed_value`)."""
        if isinstance(node, (nodes.IfExp, nodes.If)):
            folded = self.values.fixed_value(node.test)
            if folded is not None:
                live = node.body if folded else node.orelse
                return [node.test, *(live if isinstance(live, list) else [live])]
        elif isinstance(node, nodes.BoolOp):
            for position, operand in enumerate(node.values):
                if self.values.fixed_value(operand) is (node.op == "or"):
                    return node.values[: position + 1]
        return list(node.get_children())

    def start_of(self, node: nodes.NodeNG) -> Position:
        return Position(node.lineno, self.source.char_column(node.lineno, node.col_offset))

    def break_start(self, node: nodes.NodeNG, *, breaks_itself: bool = False) -> Position:
        """Where a finding on *node* starts: the line (and column) Dynamo logs for the break, see :mod:`break_sites`."""
        line, byte_column = break_position(node, breaks_itself=breaks_itself)
        return Position(line, self.source.char_column(line, byte_column))

    def end_of(self, node: nodes.NodeNG) -> Position:
        line = node.end_lineno or node.lineno
        return Position(line, self.source.char_column(line, node.end_col_offset or 0))


def _function_definitions(module: nodes.Module) -> Iterator[nodes.FunctionDef]:
    """Every ``def`` in *module*, found by walking statements only (a ``def`` is always one)."""
    stack: list[nodes.NodeNG] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, nodes.FunctionDef):
            yield node
        stack.extend(child for child in node.get_children() if child.is_statement or isinstance(child, nodes.MatchCase))


@dataclass
class RuleContext:
    """One rule's view of a :class:`FileAnalysis`."""

    analysis: FileAnalysis
    rule: Rule
    options: Mapping[str, Any]

    @property
    def values(self) -> ValueOracle:
        return self.analysis.values

    def traced_nodes(self, *types: type[NodeT]) -> Iterator[tuple[NodeT, TracedFunction]]:
        return self.analysis.traced_nodes(*types)

    def recognised(
        self, recognise: Callable[[ValueOracle, NodeT], MatchT | None], *types: type[NodeT]
    ) -> Iterator[tuple[NodeT, TracedFunction, MatchT]]:
        """Traced nodes of *types* that *recognise* matches, each with its function and what was matched.

        Most rules are one recogniser in ``analysis/`` and a message; this is the
        loop they share.
        """
        for node, traced in self.traced_nodes(*types):
            found = recognise(self.values, node)
            if found is not None:
                yield node, traced, found

    def report_condition(
        self, parts: Sequence[nodes.NodeNG], message: str, traced: TracedFunction, fix: Fix | None
    ) -> Iterator[Diagnostic]:
        """One diagnostic per tensor operand of a condition, since Dynamo logs each; the fix rides on the first.

        *message* holds ``{}`` where the operand's source goes.
        """
        for index, part in enumerate(parts):
            yield self.report(part, message.format(snippet(part)), traced, fix if index == 0 else None)

    def _shown_only_when_partial(self, node: nodes.NodeNG, fix: Fix | None) -> Fix | None:
        """*fix* as display-only when *node* is a tensor on some paths only (:meth:`ValueOracle.partial`):
        the rewrite would hand tensor operations a Python value on the other paths."""
        if fix is None or fix.applicability is Applicability.DISPLAY_ONLY or not self.values.partial(node):
            return fix
        return Fix(fix.edits, Applicability.DISPLAY_ONLY, fix.message + PARTIAL_NOTE)

    def report(
        self,
        node: nodes.NodeNG,
        message: str,
        traced: TracedFunction | None = None,
        fix: Fix | None = None,
        gate_at: nodes.NodeNG | None = None,
        breaks_itself: bool = False,
    ) -> Diagnostic:
        """A diagnostic of this rule spanning *node*, starting where Dynamo logs the break.

        Every message ends with the static gate that guards the break ("only in
        training", "only in fp16"), read at *gate_at* (default *node*): a
        finding reported away from its cause (a module's ``__init__`` line for a
        construction in ``forward``) names the gates of the cause. A call that
        *breaks_itself* is placed where it is called, not where a test it is an
        operand of jumps (:func:`~graphmend_lint.analysis.break_sites.break_position`).
        """
        return Diagnostic(
            code=self.rule.code,
            message=message + gate_note(self.values, gate_at or node),
            path=self.analysis.path,
            start=self.analysis.break_start(node, breaks_itself=breaks_itself),
            end=self.analysis.end_of(node),
            fix=self._shown_only_when_partial(node, fix),
            scope_chain=traced.chain if traced else (),
        )
