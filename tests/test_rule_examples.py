"""Every rule's VALID and INVALID examples, run through the public API (Fixit-style)."""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path

import pytest

from graphmend_lint import fix_source, lint_source
from graphmend_lint.rules import all_rules
from graphmend_lint.rules.base import Example, Rule
from tests.example_settings import example_settings

VALID = [(rule, source) for rule in all_rules() for source in rule.valid]
INVALID = [(rule, example) for rule in all_rules() for example in rule.invalid]


def _ids(pairs: list) -> list[str]:
    return [f"{rule.code}-{index}" for index, (rule, _) in enumerate(pairs)]


@pytest.mark.parametrize(("rule", "source"), VALID, ids=_ids(VALID))
def test_valid_example_is_not_flagged(rule: type[Rule], source: str) -> None:
    assert [d for d in lint_source(source) if d.code == rule.code] == []


@pytest.mark.parametrize(("rule", "example"), INVALID, ids=_ids(INVALID))
def test_invalid_example_is_flagged_and_fixed(rule: type[Rule], example: Example) -> None:
    settings = example_settings(rule, example)
    findings = [d for d in lint_source(example.source, config=settings) if d.code == rule.code]
    assert findings, "expected a finding"
    offered = {d.fix.applicability for d in findings if d.fix is not None}
    assert offered == example.applicabilities(), "the example's fixed/unsafe/advice do not say what the rule offers"
    if example.fixed is None:
        return
    result = fix_source(example.source, config=settings, unsafe=example.unsafe)
    assert result.source == example.fixed
    assert fix_source(result.source, config=settings, unsafe=example.unsafe).source == result.source, (
        "fix is not idempotent"
    )
    if example.unsafe:
        assert fix_source(example.source, config=settings).source == example.source, "unsafe fix applied as safe"


def test_every_rule_has_examples_and_docs() -> None:
    for rule in all_rules():
        if rule.code == "GM001":
            continue
        assert rule.invalid, f"{rule.code} has no INVALID example"
        for section in ("## What it does", "## Why is this bad", "## Example", "## Fix safety"):
            assert section in (rule.__doc__ or ""), f"{rule.code} docstring lacks {section!r}"


def _registry() -> dict:
    spec = find_spec("torch")
    assert spec is not None and spec.submodule_search_locations, "torch must be installed for this test"
    path = Path(next(iter(spec.submodule_search_locations))) / "_dynamo" / "graph_break_registry.json"
    return json.loads(path.read_text())


@pytest.mark.parametrize("rule", [r for r in all_rules() if r.dynamo_gb], ids=lambda r: r.code)
def test_dynamo_ids_exist_with_the_claimed_gb_type(rule: type[Rule]) -> None:
    registry = _registry()
    for gb_id, gb_type in rule.dynamo_gb.items():
        assert gb_id in registry, f"{rule.code}: {gb_id} is not in torch's graph_break_registry.json"
        assert registry[gb_id][0]["Gb_type"] == gb_type
