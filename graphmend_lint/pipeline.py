"""The pure per-file pipeline: text in, diagnostics (and fixed text) out.

parse → scope → astroid (pruned) → values → rules → noqa/selection.
Nothing here touches the disk; :mod:`graphmend_lint.engine` does that.
"""

from __future__ import annotations

import ast
import contextlib
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

from graphmend_lint.analysis.imports import ImportTable, module_name_for
from graphmend_lint.analysis.scope import ScopeFacts, Seed, SeedSinks, analyze_scope
from graphmend_lint.config import Settings
from graphmend_lint.context import FileAnalysis, RuleContext
from graphmend_lint.diagnostics import Diagnostic, FixResult, Position
from graphmend_lint.fixer import apply_fixes
from graphmend_lint.noqa import unsuppressed
from graphmend_lint.rules import Rule, all_rules
from graphmend_lint.selection import is_selected, reports_syntax_errors
from graphmend_lint.source import SourceFile

SYNTAX_ERROR_CODE = "GM001"
MAX_FIX_ROUNDS = 10
#: Python frames analysis may use. CPython's parser accepts expressions nested about 3,000 deep
#: (a sum of 3,000 terms); astroid's rebuilder and the rules' tree walks take a few frames per level.
RECURSION_LIMIT = 40_000


@dataclass
class FileOutcome:
    """What linting one file produced."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    seeds: tuple[Seed, ...] = ()
    seed_sinks: SeedSinks = SeedSinks()
    internal_errors: list[str] = field(default_factory=list)


def selected_rules(settings: Settings, path: str | None = None) -> list[type[Rule]]:
    return [rule for rule in all_rules() if is_selected(rule.code, settings, path)]


def _syntax_error(path: str, source: SourceFile, error: SyntaxError) -> Diagnostic:
    line = error.lineno or 1
    col = max((error.offset or 1) - 1, 0)
    position = Position(line, min(col, len(source.line(line))))
    return Diagnostic(SYNTAX_ERROR_CODE, f"SyntaxError: {error.msg}", path, position, position)


def parse(source: SourceFile, path: str) -> ast.Module | Diagnostic:
    """The stdlib tree, or a GM001 diagnostic at the error's position."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            return ast.parse(source.text, filename=path)
    except SyntaxError as error:
        return _syntax_error(path, source, error)
    except (ValueError, RecursionError, MemoryError) as error:  # null bytes, absurd nesting
        return Diagnostic(SYNTAX_ERROR_CODE, f"cannot parse: {error}", path, Position(1, 0), Position(1, 0))


@contextlib.contextmanager
def _recursion_headroom() -> Iterator[None]:
    """Let tree walks recurse as deep as any file Python can parse, then restore the caller's limit.

    Python 3.11 keeps pure-Python calls off the C stack, so the raised limit
    costs memory only when a file is really that deep.
    """
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def analyze(
    source: SourceFile, path: str, settings: Settings, seeds: Sequence[Seed] = ()
) -> FileOutcome:
    """Lint one source text: the whole pipeline, minus disk and output."""
    with _recursion_headroom():
        return _analyze(source, path, settings, seeds)


def _analyze(source: SourceFile, path: str, settings: Settings, seeds: Sequence[Seed]) -> FileOutcome:
    outcome = FileOutcome(path=path)
    tree = parse(source, path)
    if isinstance(tree, Diagnostic):
        if reports_syntax_errors(SYNTAX_ERROR_CODE, settings, path):
            outcome.diagnostics.append(tree)
        return outcome
    rules = selected_rules(settings, path)
    module_name, is_package = module_name_for(path) if path != "<stdin>" else ("__main__", False)
    imports = ImportTable.from_tree(tree, module_name, is_package)
    scope = analyze_scope(tree, imports, path, settings.scope, seeds, settings.extra_compile_functions, source.text)
    outcome.seeds = scope.seeds
    outcome.seed_sinks = scope.seed_sinks
    if not scope.functions or not rules:
        return outcome
    try:
        analysis = _file_analysis(tree, source, path, module_name, is_package, imports, scope, settings)
    except (RecursionError, MemoryError) as error:
        outcome.internal_errors.append(f"internal error: {path} is too deep or too large to analyze ({type(error).__name__})")
        return outcome
    for rule_class in rules:
        rule = rule_class()
        context = RuleContext(analysis, rule, {**rule_class.option_defaults(), **settings.options_for(rule.code)})
        try:
            outcome.diagnostics.extend(rule.check(context))
        except Exception as error:  # one broken rule must not take the file down
            where = traceback.extract_tb(error.__traceback__)[-1]
            outcome.internal_errors.append(
                f"internal error: rule {rule.code} failed on {path}: {type(error).__name__}: {error} "
                f"({PurePath(where.filename).name}:{where.lineno})"
            )
    outcome.diagnostics = sorted(unsuppressed(source.text, outcome.diagnostics), key=lambda d: d.sort_key)
    return outcome


def _file_analysis(
    tree: ast.Module,
    source: SourceFile,
    path: str,
    module_name: str,
    is_package: bool,
    imports: ImportTable,
    scope: ScopeFacts,
    settings: Settings,
) -> FileAnalysis:
    from graphmend_lint.analysis.astroid_tree import build_astroid_module
    from graphmend_lint.analysis.values import ValueOracle

    module = build_astroid_module(tree, source.text, module_name, path, scope, imports, is_package)
    values = ValueOracle(module, imports, scope, settings.assume_tensor_parameters)
    def lint_trial(text: SourceFile, trial_settings: Settings, seeds: tuple[Seed, ...]) -> list[Diagnostic]:
        return analyze(text, path, trial_settings, seeds).diagnostics

    return FileAnalysis(path, source, module, imports, scope, values, settings, lint_trial)


@dataclass
class FixOutcome:
    """The result of fixing one text, and why it stopped."""

    result: FixResult
    outcome: FileOutcome
    error: str | None = None


def fix(
    source: SourceFile, path: str, settings: Settings, unsafe: bool, seeds: Sequence[Seed] = ()
) -> FixOutcome:
    """Apply every applicable fix, re-lint, repeat until stable (at most 10 rounds).

    A round whose result does not parse is thrown away and fixing stops: the
    user's file is never left broken.
    """
    current = source
    applied: list[Diagnostic] = []
    error: str | None = None
    outcome = analyze(current, path, settings, seeds)
    for _ in range(MAX_FIX_ROUNDS):
        fixable = [d for d in outcome.diagnostics if d.fix is not None and d.fix.is_applicable(unsafe)]
        if not fixable:
            break
        text, round_applied = apply_fixes(current, fixable)
        if not round_applied or text == current.text:
            break
        candidate = SourceFile(text, current.encoding, current.bom)
        if isinstance(parse(candidate, path), Diagnostic):
            codes = ", ".join(sorted({d.code for d in round_applied}))
            error = f"{path}: a fix ({codes}) produced code that does not parse; those fixes were not applied"
            break
        current = candidate
        applied.extend(round_applied)
        outcome = analyze(current, path, settings, seeds)
    result = FixResult(source=current.text, applied=tuple(applied), remaining=tuple(outcome.diagnostics))
    return FixOutcome(result=result, outcome=outcome, error=error)
