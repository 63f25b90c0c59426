"""``graphmend-lint --fix --verify`` through the real CLI: a fix stays only when Dynamo logs fewer breaks."""

from __future__ import annotations

import pytest
from conftest import run_cli, write


pytest.importorskip("torch")
pytestmark = pytest.mark.dynamo

# GM101 predicates the branch with torch.where: Dynamo no longer logs a break.
BRANCH = """
import torch


def pick(x):
    y = x * 2
    if y.sum() > 0:
        y = y + 1
    else:
        y = y - 1
    return y * 3


compiled = torch.compile(pick)
"""
# GM403 turns `np.sqrt(4.0)` into `math.sqrt(4.0)`. That line never broke the
# graph; the `.item()` does (GB0124), and GM301 is not selected, so Dynamo
# logs 1 break before and 1 after: the fix is churn and is rolled back. The
# same verdict catches a print moved to the end of its function, which
# explain() no longer counts but Dynamo still logs (see test_verify_truth.py).
CHURN = """
import numpy as np
import torch


def scale(x):
    factor = abs(np.sqrt(4.0))  # GM403 flags the builtin use, yet Dynamo traces abs() of it: no break
    n = x.sum().item()
    return x * factor + n


compiled = torch.compile(scale)
"""
MAKE_BRANCH = """
import torch

import fv_branch


def factory():
    return fv_branch.pick, [(torch.ones(4),), (-torch.ones(4),)]
"""
MAKE_CHURN = """
import torch

import fv_churn


def factory():
    return fv_churn.scale, (torch.ones(3),)
"""


def test_fix_verify_keeps_the_fix_dynamo_backs_and_rolls_back_one_that_removes_no_logged_break(project):
    (project / "pyproject.toml").write_text(
        '[tool.graphmend-lint]\nunsafe-fixes = true\nselect = ["GM101", "GM403"]\n\n'
        '[tool.graphmend-lint.verify]\ntargets = ["fv_make_branch.py::factory", "fv_make_churn.py::factory"]\n'
    )
    branch, churn = write(project, "fv_branch.py", BRANCH), write(project, "fv_churn.py", CHURN)
    write(project, "fv_make_branch.py", MAKE_BRANCH)
    write(project, "fv_make_churn.py", MAKE_CHURN)
    branch_before, churn_before = branch.read_text(), churn.read_text()

    result = run_cli("--fix", "--verify", "--no-cache", "fv_branch.py", "fv_churn.py", cwd=project)

    assert branch.read_text() != branch_before and "torch.where" in branch.read_text()
    assert churn.read_text() == churn_before, result.err
    assert "fv_branch.py: kept (fv_make_branch.py::factory: improved (logged breaks 1 -> 0))" in result.err
    assert "fv_churn.py: rolled back (fv_make_churn.py::factory: not reduced (logged breaks 1 -> 1))" in result.err
    assert "fv_churn.py:" in result.out and "fv_branch.py:" not in result.out  # findings match the disk
    assert result.code == 1, result.err


def test_verify_needs_fix_and_targets(project):
    write(project, "m.py", "x = 1\n")
    assert run_cli("--verify", "m.py", cwd=project).code == 2
    result = run_cli("--fix", "--verify", "m.py", cwd=project)
    assert result.code == 2 and "needs targets" in result.err
