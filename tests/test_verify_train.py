"""verify --train: model.train(), forward and backward, gradients compared, training-only breaks measured.

End to end through ``python -m graphmend_lint verify`` with real Dynamo in
fresh arm processes (slow), on ``verify_fixtures/training_branch.py``
(layerdrop) with hand-written fixes from ``verify_fixtures/training_transforms.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, Completed, run_cli

pytest.importorskip("torch")
pytestmark = pytest.mark.dynamo

FIXTURES = REPO / "tests" / "verify_fixtures"


def verify(tmp_path: Path, transform: str, *args: str) -> tuple[Completed, dict[str, Any]]:
    result = run_cli("verify", f"{FIXTURES / 'training_branch.py'}::factory", "--transform",
                     f"{FIXTURES / 'training_transforms.py'}::{transform}", *args, "--json", "out.json", cwd=tmp_path)
    (data,) = json.loads((tmp_path / "out.json").read_text())
    return result, data


def test_layerdrop_breaks_only_in_train_mode_and_its_predication_keeps_gradients(tmp_path):
    _, evaluated = verify(tmp_path, "predicate_layerdrop")
    assert evaluated["original"]["logged_sites"] == 0 and evaluated["gradients_equal"] is None
    result, trained = verify(tmp_path, "predicate_layerdrop", "--train")
    assert [b["gb_id"] for b in trained["original"]["breaks"]] == ["GB0170"]
    assert trained["fixed"]["logged_sites"] == 0 and trained["fixed"]["fullgraph"]["passes"] is True
    assert trained["outputs_equal"] is True and trained["gradients_equal"] is True
    assert "equal, grads equal" in result.out and result.code == 0, result.err


def test_a_fix_that_keeps_outputs_but_cuts_a_gradient_fails(tmp_path):
    result, data = verify(tmp_path, "detach_the_skip_path", "--train")
    assert data["outputs_equal"] is True and data["gradients_equal"] is False
    assert data["status"] == "fail" and data["detail"].startswith("gradients differ: input set 0: grad.first.")
    assert "equal, grads DIFFER" in result.out and result.code == 1


def test_verify_variants_runs_the_original_once_and_skips_a_variant_that_changes_no_text(tmp_path):
    from graphmend_lint.verify.hook import ReferencedTransform, identity
    from graphmend_lint.verify.runner import ArmPlan, RunOptions, verify_variants
    from graphmend_lint.verify.targets import default_scope_modules, parse_target

    target = parse_target(f"{FIXTURES / 'training_branch.py'}::factory")
    scope = default_scope_modules(target)
    fix = ReferencedTransform(f"{FIXTURES / 'training_transforms.py'}::predicate_layerdrop", str(tmp_path))
    messages: list[str] = []
    original, results = verify_variants(
        target, ArmPlan(scope, identity), {"same": ArmPlan(scope, identity), "fixed": ArmPlan(scope, fix)},
        RunOptions(device="cpu", train=True), messages.append,
    )
    assert not isinstance(original, str) and original.logged_sites == 1
    assert results["same"] is None  # its transform changes no text: it would run the original code
    fixed = results["fixed"]
    assert fixed is not None and fixed.fixed is not None and fixed.fixed.logged_sites == 0
    assert (fixed.outputs_equal, fixed.gradients_equal, fixed.status) == (True, True, "pass")
    assert sum(message.startswith("[original] building") for message in messages) == 1
