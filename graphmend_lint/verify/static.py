"""The linter's side of verification: fix and lint texts as if the target were compiled.

Verify compiles the target's callable itself, so the file has no
``torch.compile`` call for the linter to find. The callable's qualified name
(reported by the original arm) is therefore handed to the linter as a scope
*seed*, the same mechanism the engine uses for cross-file calls: the linter
then treats it exactly as if the code said ``torch.compile(callable)``.
That uses :func:`graphmend_lint.pipeline.fix` / ``analyze`` (which take
seeds) instead of ``fix_source`` / ``lint_source`` (which do not). The scope
modules are linted together first (:func:`settle`), so calls from one into
another are seeds too, as when the engine lints files on disk.

Kept apart from :mod:`.reconcile` so that the pairing logic stays pure, and
so that a linter failure degrades reconciliation instead of the whole run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphmend_lint.verify.reconcile import Finding, family_of

from graphmend_lint.diagnostics import Applicability, Diagnostic

if TYPE_CHECKING:
    from graphmend_lint.analysis.scope import Seed
    from graphmend_lint.config import Settings
    from graphmend_lint.diagnostics import FixResult
    from graphmend_lint.pipeline import FileOutcome

ENTRY_CHAIN = ("graphmend-lint verify target",)


def entry_seeds(entries: Sequence[str], filename: str) -> tuple[Seed, ...]:
    """Seeds for the entries that live in ``filename``'s module."""
    from graphmend_lint.analysis.imports import module_name_for
    from graphmend_lint.analysis.scope import Seed

    module = module_name_for(filename)[0]
    return tuple(Seed(e, False, ENTRY_CHAIN) for e in entries if e.startswith(module + "."))


@dataclass(frozen=True)
class SettledScope:
    """Scope texts linted together: the seeds each file gets and its findings with them."""

    seeds: dict[str, tuple[Seed, ...]]
    outcomes: dict[str, FileOutcome]


def settle(texts: Mapping[str, str], settings: Settings, entries: Sequence[str] = ()) -> SettledScope:
    """Lint ``{filename: text}`` together, routing calls between them, with ``entries`` compiled.

    A scope module is fixed alone when it is imported, but what it must treat
    as compiled can come from another module (Phi-3's ``forward`` in
    ``modeling_phi3`` reaches ``longrope_frequency_update`` in
    ``modeling_rope_utils`` through a decorator). So all scope texts are linted
    together first, exactly as the engine routes seeds between files on disk.
    """
    from graphmend_lint.analysis.imports import module_name_for
    from graphmend_lint.engine import settle_seeds
    from graphmend_lint.pipeline import analyze
    from graphmend_lint.source import SourceFile

    seeds = {filename: set(entry_seeds(entries, filename)) for filename in texts}

    def lint(filenames: list[str]) -> dict[str, FileOutcome]:
        return {f: analyze(SourceFile(texts[f]), f, settings, _ordered(seeds[f])) for f in filenames}

    outcomes = lint(sorted(texts))
    settle_seeds(outcomes, {module_name_for(f)[0]: f for f in texts}, seeds, lint)
    return SettledScope({f: _ordered(found) for f, found in seeds.items()}, outcomes)


def _ordered(seeds: set[Seed]) -> tuple[Seed, ...]:
    return tuple(sorted(seeds, key=repr))


def fix_text(text: str, filename: str, settings: Settings, unsafe: bool, seeds: Sequence[Seed] = ()) -> FixResult:
    """Every fix graphmend-lint applies to ``text``, with ``seeds`` (from :func:`settle`) treated as compiled."""
    from graphmend_lint.pipeline import fix
    from graphmend_lint.source import SourceFile

    return fix(SourceFile(text), filename, settings, unsafe, tuple(seeds)).result


def needs_unsafe(diagnostic: Diagnostic, unsafe: bool) -> bool:
    """A fix that ``--unsafe-fixes`` would apply but this run may not."""
    fix = diagnostic.fix
    return not unsafe and fix is not None and bool(fix.edits) and fix.applicability is Applicability.UNSAFE


def apply_one_fix(
    text: str, filename: str, settings: Settings, unsafe: bool, seeds: Sequence[Seed], code: str, line: int
) -> str:
    """``text`` with only the fix of the ``code`` finding starting at ``line`` applied (one round)."""
    from graphmend_lint.fixer import apply_fixes
    from graphmend_lint.pipeline import analyze
    from graphmend_lint.source import SourceFile

    source = SourceFile(text)
    wanted = [
        d
        for d in analyze(source, filename, settings, tuple(seeds)).diagnostics
        if d.code == code and d.start.line == line and d.fix is not None and d.fix.is_applicable(unsafe)
    ]
    return apply_fixes(source, wanted[:1])[0] if wanted else text


def findings_of(settled: SettledScope, unsafe: bool = False) -> list[Finding]:
    """The findings of texts linted together; they keep the filename Dynamo reports.

    ``fixable`` marks findings whose fix this run applies (with ``unsafe`` as given).
    """
    return [
        Finding(d.code, filename, d.start.line, d.end.line, d.message,
                fixable=d.fix is not None and bool(d.fix.edits) and d.fix.is_applicable(unsafe))
        for filename in sorted(settled.outcomes)
        for d in settled.outcomes[filename].diagnostics
    ]


def gb_families() -> dict[str, str]:
    """Dynamo GB id -> rule family, from the ids each rule declares it prevents."""
    from graphmend_lint.rules import all_rules

    families: dict[str, str] = {}
    for rule in all_rules():
        for gb_id in rule.dynamo_gb:
            families.setdefault(gb_id.upper(), family_of(rule.code))
    return families
