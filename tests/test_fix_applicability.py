"""Each rule's fix applicabilities are exactly what its fixes produce.

``graphmend-lint rules`` and the rule pages show ``Rule.fix_applicabilities``,
derived from what the INVALID examples say (``tests/test_rule_examples.py``
checks each example on its own). This test adds the catalog programs (with the
catalog's own settings, as the command line reads them), so a kind of fix the
catalog meets but no example shows fails here, and the table cannot say
``unsafe`` while ``--fix`` applies a fix as safe, or the reverse.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmend_lint import lint_source
from graphmend_lint.config import load_settings
from graphmend_lint.diagnostics import Applicability
from graphmend_lint.rules import Rule, all_rules
from tests.example_settings import example_settings

CATALOG = Path(__file__).resolve().parents[1] / "rules"
RULES = [rule for rule in all_rules() if rule.code != "GM001"]


def produced(rule: type[Rule]) -> set[Applicability]:
    found: set[Applicability] = set()
    sources = [(example.source, "example.py", example_settings(rule, example)) for example in rule.invalid]
    sources += [(path.read_text(), str(path), load_settings(start=path)) for path in sorted((CATALOG / rule.code).glob("*.py"))]
    for text, path, settings in sources:
        for diagnostic in lint_source(text, path, config=settings):
            if diagnostic.code == rule.code and diagnostic.fix is not None:
                found.add(diagnostic.fix.applicability)
    return found


@pytest.mark.parametrize("rule", RULES, ids=[rule.code for rule in RULES])
def test_applicabilities_are_the_ones_produced(rule: type[Rule]) -> None:
    assert produced(rule) == set(rule.fix_applicabilities)
