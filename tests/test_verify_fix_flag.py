"""``graphmend-lint --fix --verify`` through the real CLI: fixes are kept only when Dynamo logs fewer breaks."""

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
# GM201's `defer` fix moves the print after the last tensor op. explain() then
# counts no break, but Dynamo still LOGS GB0059 there and fullgraph=True still
# fails: the break is not removed, so the fix is churn and is rolled back.
LAST = """
import torch


def last(x):
    y = x * 3
    print("last", y.shape)
    return y - 1


compiled = torch.compile(last)
"""
MAKE_BRANCH = """
import torch

import fv_branch


def factory():
    return fv_branch.pick, [(torch.ones(4),), (-torch.ones(4),)]
"""
MAKE_LAST = """
import torch

import fv_last


def factory():
    return fv_last.last, (torch.ones(4),)
"""


def test_fix_verify_keeps_the_fix_dynamo_backs_and_rolls_back_a_deferred_print(project):
    (project / "pyproject.toml").write_text(
        '[tool.graphmend-lint]\nunsafe-fixes = true\nselect = ["GM101", "GM201"]\nside-effect-fix = "defer"\n\n'
        '[tool.graphmend-lint.verify]\ntargets = ["fv_make_branch.py::factory", "fv_make_last.py::factory"]\n'
    )
    branch, last = write(project, "fv_branch.py", BRANCH), write(project, "fv_last.py", LAST)
    write(project, "fv_make_branch.py", MAKE_BRANCH)
    write(project, "fv_make_last.py", MAKE_LAST)
    branch_before, last_before = branch.read_text(), last.read_text()

    result = run_cli("--fix", "--verify", "--no-cache", "fv_branch.py", "fv_last.py", cwd=project)

    assert branch.read_text() != branch_before and "torch.where" in branch.read_text()
    assert last.read_text() == last_before  # the deferral removed no logged break: rolled back
    assert "fv_branch.py: kept (fv_make_branch.py::factory: improved (logged breaks 1 -> 0))" in result.err
    assert "fv_last.py: rolled back (fv_make_last.py::factory: not reduced (logged breaks 1 -> 1))" in result.err
    assert "fv_last.py:" in result.out and "fv_branch.py:" not in result.out  # findings match the disk
    assert result.code == 1, result.err


def test_verify_needs_fix_and_targets(project):
    write(project, "m.py", "x = 1\n")
    assert run_cli("--verify", "m.py", cwd=project).code == 2
    result = run_cli("--fix", "--verify", "m.py", cwd=project)
    assert result.code == 2 and "needs targets" in result.err
