"""Fix A for GM201/GM202: run print/log calls in the function's epilogue.

Measured on torch 2.13: a side effect placed after the function's last tensor
op, right before a ``return`` of plain names, leaves **one** graph, where the
same call in the middle splits it in two. So the rewrite moves every deferrable
call of a function (prints, logger calls, ``warnings.warn``) to the epilogue,
in its original order, printing the same text:

* **Arguments** are evaluated at the original point into fresh locals
  (``_gm_msg_1 = y.sum()``); names nothing rebinds or mutates later, constants
  and formatting (f-strings, ``%``, ``str()``, ``.item()``...) are left to the
  epilogue, so ``.item()`` no longer breaks mid-function and the text is the
  same. Tensor work is never left to the epilogue: after the first replayed
  call every further tensor op would start a new graph (measured).
* **Snapshots**: an argument that names a tensor mutated in place later
  (``add_``, ``x[i] = ...``, ``+=``, ``out=``, also through an alias) is
  captured with ``.detach().clone()``; a non-tensor that is mutated later
  makes the function's calls *declined*.
* **Conditions**: a call under ``if``/``try`` sets ``_gm_flag_N = True``; an
  epilogue that cannot know whether it ran re-tests the flag (Dynamo
  constant-folds it). An epilogue in the call's own block replays it
  unconditionally; one the call can never precede leaves it out.
* **Loops**: a call in a loop appends its captured values to a list, replayed
  with ``list(map(lambda _gm_args: <call>, _gm_log_N))``. A ``for`` statement
  in the epilogue would make Dynamo give up on the whole frame (measured).
* **Returns**: each ``return`` whose value does tensor work first stores it in
  ``_gm_ret``, then replays, then returns it; a reachable function end gets the
  epilogue too.

A function's calls are deferred all together or not at all, so that eager
output keeps its order. They are declined (and the guard, Fix B, offered) when
deferring would change behaviour or not help: the call's value is used,
``*args``/``**kwargs``, ``exc_info``/``.exception()`` (the epilogue has no
current exception), a call in an ``except``/``finally`` block, a ``return``
inside ``with``/``try``/``while`` (a break there still splits the graph or
skips the frame, measured), generators, and **helpers**: a function another
traced function calls. Deferring inside a helper still splits the caller's
graph (measured: 3 graphs either way), and moving the call into the caller
would change the helper's signature for every caller, so helpers get Fix B.
In ``scope = "modules"`` a ``forward`` whose class is used as a submodule
(``self.block = Block()``, a table of attention classes, a subclass) counts
as a helper; the outermost model's ``forward`` is deferred.

Only the deferred calls keep their relative order: other host I/O left in
place (GM203) now runs before them. With ``fullgraph=True`` any break is an
error, even in the epilogue, so those functions get the guard as well.

Already-deferred calls are recognised by *position*, not by a marker: a call
in an epilogue (see ``SideEffectFinder.in_epilogue``) does not split the
graph, whoever wrote it, so it is not a finding and a second ``--fix``
changes nothing.

Fix safety: unsafe. Output now appears after the function's computation, and
if the function raises in between, the deferred messages are lost. Log
records report the epilogue's line number, and a snapshot of a tensor that
requires grad prints without its ``grad_fn``. Mutations made inside called
functions are not seen by the snapshot analysis.
"""

from __future__ import annotations

from astroid import nodes

from graphmend_lint.analysis.mutations import own_nodes
from graphmend_lint.analysis.scope import TracedFunction
from graphmend_lint.analysis.side_effects import (
    DEFERRABLE,
    Effect,
    SideEffectFinder,
    compiled_with_fullgraph,
)
from graphmend_lint.context import FileAnalysis
from graphmend_lint.diagnostics import Applicability, Diagnostic, Fix, Position
from graphmend_lint.fixes.defer_plan import Decline, Planner, is_helper
from graphmend_lint.fixes.defer_rewrite import Rewriter
from graphmend_lint.fixes.guard import GUARD_MESSAGE, guard_statement
from graphmend_lint.noqa import Suppressions

DEFER_MESSAGE = "Defer to the end of the function, after the last tensor op"
#: The rule that owns each deferrable effect (selection and noqa are per rule).
EFFECT_CODES = {Effect.PRINT: "GM201", Effect.LOG: "GM202", Effect.WARN: "GM202"}


class SideEffectFixes:
    """The fix each GM201/GM202 finding gets: the deferral of its function, or the guard.

    One instance serves one rule run on one file; plans are cached per
    function. GM201 and GM202 build identical plans (same candidates, same
    edits), so whichever the fixer applies first fixes both.
    """

    def __init__(self, analysis: FileAnalysis, finder: SideEffectFinder) -> None:
        self.analysis = analysis
        self.finder = finder
        self._plans: dict[nodes.FunctionDef, Fix | str] = {}
        self._suppressions: Suppressions | None = None

    def fix_for(self, call: nodes.Call, function: nodes.FunctionDef, traced: TracedFunction) -> Fix | None:
        statement = call.parent if isinstance(call.parent, nodes.Expr) else None
        if self.analysis.settings.side_effect_fix == "guard":
            return guard_statement(self.analysis, statement) if statement is not None else None
        if compiled_with_fullgraph(traced):
            plan: Fix | str = "with `fullgraph=True` a call in the epilogue is still an error"
        else:
            if function not in self._plans:
                self._plans[function] = self._plan(function, traced)
            plan = self._plans[function]
        if isinstance(plan, Fix):
            return plan
        guard = guard_statement(self.analysis, statement) if statement is not None else None
        if guard is None:
            return None
        return Fix(guard.edits, guard.applicability, f"{GUARD_MESSAGE}; not deferred: {plan}")

    def candidates(self, function: nodes.FunctionDef) -> list[nodes.Call]:
        """The calls of *function* the deferral moves, in source order."""
        found = []
        for call in (node for node in own_nodes(function) if isinstance(node, nodes.Call)):
            if self.analysis.scope.is_eager_only(call.lineno):
                continue
            effect = self.finder.classify(call)
            if effect is None or effect.effect not in DEFERRABLE or self.finder.in_epilogue(call, function):
                continue
            if self._enabled(EFFECT_CODES[effect.effect], call.lineno):
                found.append(call)
        return found

    def _enabled(self, code: str, line: int) -> bool:
        from graphmend_lint.pipeline import (
            is_selected,  # the pipeline imports the rules, hence late
        )

        if not is_selected(code, self.analysis.settings, self.analysis.path):
            return False
        if self._suppressions is None:
            self._suppressions = Suppressions.from_source(self.analysis.source.text)
        probe = Diagnostic(code, "", self.analysis.path, Position(line, 0), Position(line, 0))
        return not self._suppressions.suppresses(probe)

    def _plan(self, function: nodes.FunctionDef, traced: TracedFunction) -> Fix | str:
        try:
            calls = self.candidates(function)
            if is_helper(self.analysis, function, traced):
                raise Decline(
                    "another traced function calls this one, so a call deferred here would still split the "
                    "caller's graph"
                )
            plan = Planner(self.analysis, function).plan(calls)
            edit = Rewriter(self.analysis, function, plan).edit()
        except Decline as reason:
            return str(reason)
        count = len(plan.sites)
        message = DEFER_MESSAGE + (f" ({count} calls)" if count > 1 else "")
        return Fix(edits=(edit,), applicability=Applicability.UNSAFE, message=message)
