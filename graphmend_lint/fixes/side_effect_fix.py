"""Which fix a side-effect finding gets (GM201, GM202, GM203), chosen per call.

Every option was measured on torch 2.13 against Dynamo's *logged* breaks
(``docs/side-effects.md`` has the table). Moving a call to the end of the
function does not remove its break: Dynamo still logs it there and
``fullgraph=True`` still fails. What does remove it:

* ``print`` → ``torch._higher_order_ops.print`` (:mod:`.hop_print`): traced
  into the graph, prints the runtime values in order, same text eagerly.
  **Safe.** Used when every value is provably flat and the target torch has
  the op; otherwise the print is guarded.
* logger calls and ``warnings.warn`` → ``if not torch.compiler.is_compiling():``
  (:mod:`.guard`): constant-folded, eager behaviour unchanged, the record is
  not emitted under compile. **Safe**: eager runs are identical and a log
  record is diagnostics, which is what transformers does with its own
  warnings. Dynamo's ``reorderable_logging_functions`` refuses logger methods
  and ``ignore_logger_methods`` needs the compile site, so there is no
  source-level way to keep the record under compile.
* a ``print`` the op cannot take, ``sys.stdout.write``, ``breakpoint()`` →
  the same guard, **unsafe**: output a user asked for vanishes under compile.

A run of consecutive statements that get the same guard gets one guard.
Statements whose rule is not selected or is suppressed with ``# noqa`` are
never wrapped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from astroid import nodes

from graphmend_lint.analysis.side_effects import Effect, SideEffectFinder
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Diagnostic, Fix, Position
from graphmend_lint.fixes.guard import GUARD_MESSAGE, can_guard, guard_statements, spans_string_lines
from graphmend_lint.fixes.hop_print import hop_print_fix, supports_hop_print
from graphmend_lint.noqa import Suppressions
from graphmend_lint.selection import is_selected

#: The rule that owns each effect the guard handles (selection and noqa are per rule).
EFFECT_CODES = {
    Effect.PRINT: "GM201",
    Effect.LOG: "GM202",
    Effect.WARN: "GM202",
    Effect.STREAM: "GM203",
    Effect.DEBUGGER: "GM203",
}
#: How much the guard of each effect can be trusted (see the module docstring).
GUARD_APPLICABILITY = {
    Effect.PRINT: Applicability.UNSAFE,
    Effect.LOG: Applicability.SAFE,
    Effect.WARN: Applicability.SAFE,
    Effect.STREAM: Applicability.UNSAFE,
    Effect.DEBUGGER: Applicability.UNSAFE,
}


class SideEffectFixes:
    """The fix of each side-effect call in one file."""

    def __init__(
        self, analysis: FileAnalysis, finder: SideEffectFinder, in_breaking_loop: Callable[[nodes.Call], bool]
    ) -> None:
        self.analysis = analysis
        self.finder = finder
        #: Whether a call sits in a loop that breaks the graph elsewhere: Dynamo then runs the loop eagerly,
        #: and a print op there is traced apart and adds a break (measured, torch 2.13: GB0059 at a
        #: Tacotron 2-style ``print`` after the decoder loop's data-dependent ``break``).
        self.in_breaking_loop = in_breaking_loop
        self._suppressions: Suppressions | None = None

    def fix_for(self, call: nodes.Call, effect: Effect) -> Fix | None:
        """The print op for a print that allows it, else the guard of the statement (and its neighbours)."""
        hop = self._hop_print(call, effect)
        if isinstance(hop, Fix):
            return hop
        statement = call.parent
        if not isinstance(statement, nodes.Expr) or effect not in GUARD_APPLICABILITY:
            return None
        applicability = GUARD_APPLICABILITY[effect]
        run = self._run_around(statement, applicability)
        message = GUARD_MESSAGE if hop is None else f"{GUARD_MESSAGE}; not the print op: {hop}"
        return guard_statements(self.analysis, run, applicability, message)

    def _hop_print(self, call: nodes.Call, effect: Effect) -> Fix | str | None:
        settings = self.analysis.settings
        if effect is not Effect.PRINT or settings.side_effect_fix != "auto":
            return None
        if not supports_hop_print(settings.target_torch_version):
            return f"`torch._higher_order_ops.print` needs torch >= 2.10 (target-torch is {settings.target_torch})"
        if self.in_breaking_loop(call):
            return "the loop around it breaks the graph elsewhere, and the print op would add a break of its own"
        return hop_print_fix(self.analysis, call)

    # -- one guard for neighbours -------------------------------------------------------

    def _run_around(self, statement: nodes.Expr, applicability: Applicability) -> list[nodes.NodeNG]:
        """*statement* and the neighbours that get the same guard, in order."""
        if spans_string_lines(self.analysis, statement):
            return [statement]
        before = list(self._joining(statement, backwards=True, applicability=applicability))
        after = list(self._joining(statement, backwards=False, applicability=applicability))
        return [*reversed(before), statement, *after]

    def _joining(self, statement: nodes.NodeNG, backwards: bool, applicability: Applicability) -> Iterator[nodes.NodeNG]:
        sibling = statement.previous_sibling() if backwards else statement.next_sibling()
        while sibling is not None and self._guard_of(sibling) is applicability:
            yield sibling
            sibling = sibling.previous_sibling() if backwards else sibling.next_sibling()

    def _guard_of(self, statement: nodes.NodeNG) -> Applicability | None:
        """The guard applicability *statement* would get on its own, or ``None`` if it is not guarded."""
        if not (isinstance(statement, nodes.Expr) and isinstance(statement.value, nodes.Call)):
            return None
        call = statement.value
        found = self.finder.classify(call)
        if found is None or found.effect not in GUARD_APPLICABILITY:
            return None
        if self.analysis.scope.is_eager_only(call.lineno) or not self._reported(EFFECT_CODES[found.effect], call):
            return None
        if not can_guard(self.analysis, statement) or spans_string_lines(self.analysis, statement):
            return None
        if isinstance(self._hop_print(call, found.effect), Fix):
            return None
        return GUARD_APPLICABILITY[found.effect]

    def _reported(self, code: str, call: nodes.Call) -> bool:
        """The finding on *call* is selected and not suppressed, so its statement may be rewritten."""
        if not is_selected(code, self.analysis.settings, self.analysis.path):
            return False
        if self._suppressions is None:
            self._suppressions = Suppressions.from_source(self.analysis.source.text)
        position = Position(call.lineno, 0)
        return not self._suppressions.suppresses(Diagnostic(code, "", self.analysis.path, position, position))
