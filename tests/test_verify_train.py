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
