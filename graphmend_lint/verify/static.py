"""The linter's side of verification: fix and lint texts as if the target were compiled.

Verify compiles the target's callable itself, so the file has no
``torch.compile`` call for the linter to find. The callable's qualified name
(reported by the original arm) is therefore handed to the linter as a scope
*seed*, the same mechanism the engine uses for cross-file calls: the linter
then treats it exactly as if the code said ``torch.compile(callable)``.
That uses :func:`graphmend_lint.pipeline.fix` / ``analyze`` (which take
seeds) instead of ``fix_source`` / ``lint_source`` (which do not).

Kept apart from :mod:`.reconcile` so that the pairing logic stays pure, and
so that a linter failure degrades reconciliation instead of the whole run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from graphmend_lint.verify.reconcile import Finding, family_of

if TYPE_CHECKING:
    from graphmend_lint.analysis.scope import Seed
    from graphmend_lint.config import Settings
    from graphmend_lint.diagnostics import FixResult

ENTRY_CHAIN = ("graphmend-lint verify target",)


def entry_seeds(entries: Sequence[str], filename: str) -> tuple[Seed, ...]:
    """Seeds for the entries that live in ``filename``'s module."""
    from graphmend_lint.analysis.imports import module_name_for
    from graphmend_lint.analysis.scope import Seed

    module = module_name_for(filename)[0]
    return tuple(Seed(e, False, ENTRY_CHAIN) for e in entries if e.startswith(module + "."))


def fix_text(text: str, filename: str, settings: Settings, unsafe: bool, entries: Sequence[str] = ()) -> FixResult:
    """Every fix graphmend-lint applies to ``text``, with ``entries`` treated as compiled."""
    from graphmend_lint.pipeline import fix
    from graphmend_lint.source import SourceFile

    return fix(SourceFile(text), filename, settings, unsafe, entry_seeds(entries, filename)).result


def lint_texts(texts: Mapping[str, str], settings: Settings, entries: Sequence[str] = ()) -> list[Finding]:
    """Lint each ``{filename: text}``; findings keep the filename Dynamo reports."""
    from graphmend_lint.pipeline import analyze
    from graphmend_lint.source import SourceFile

    findings = []
    for filename, text in sorted(texts.items()):
        outcome = analyze(SourceFile(text), filename, settings, entry_seeds(entries, filename))
        for d in outcome.diagnostics:
            findings.append(Finding(d.code, filename, d.start.line, d.end.line, d.message))
    return findings


def gb_families() -> dict[str, str]:
    """Dynamo GB id -> rule family, from the ids each rule declares it prevents."""
    from graphmend_lint.rules import all_rules

    families: dict[str, str] = {}
    for rule in all_rules():
        for gb_id in rule.dynamo_gb:
            families.setdefault(gb_id.upper(), family_of(rule.code))
    return families
