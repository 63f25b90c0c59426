"""``graphmend-lint --fix --verify`` through the real CLI."""

from __future__ import annotations

import pytest
from conftest import run_cli, write


pytest.importorskip("torch")
pytestmark = pytest.mark.dynamo

# GM201's default fix defers a print to the end of its function. That removes
# the split only when the function is the compiled frame itself: called from
# compiled code, a break anywhere inside a function splits the caller's graph
# at the call, so `first` (a helper whose caller works on) keeps its break.
FIRST = """
import torch


def first(x):
    y = x * 2
    print("first", y.shape)
    return y + 1


compiled = torch.compile(first)
"""
LAST = """
import torch


def last(x):
    y = x * 3
    print("last", y.shape)
    return y - 1


compiled = torch.compile(last)
"""
MAKE_RUN = """
import torch

import fv_first


def run(x):
    return fv_first.first(x) * 5


def factory():
    return run, (torch.ones(4),)
"""
MAKE_LAST = """
import torch

import fv_last


def factory():
    return fv_last.last, (torch.ones(4),)
"""


def test_fix_verify_keeps_the_fix_that_helps_and_rolls_back_the_one_that_does_not(project):
    (project / "pyproject.toml").write_text(
        '[tool.graphmend-lint]\nunsafe-fixes = true\nselect = ["GM201"]\n\n'
        '[tool.graphmend-lint.verify]\ntargets = ["fv_make_run.py::factory", "fv_make_last.py::factory"]\n'
    )
    first, last = write(project, "fv_first.py", FIRST), write(project, "fv_last.py", LAST)
    write(project, "fv_make_run.py", MAKE_RUN)
    write(project, "fv_make_last.py", MAKE_LAST)
    first_before, last_before = first.read_text(), last.read_text()

    result = run_cli("--fix", "--verify", "--no-cache", "fv_first.py", "fv_last.py", cwd=project)

    assert last.read_text() != last_before  # the deferral that removed a break stays
    assert first.read_text() == first_before  # the one that removed none was rolled back
    assert "fv_last.py: kept (fv_make_last.py::factory: improved (breaks 1 -> 0))" in result.err
    assert "fv_first.py: rolled back (fv_make_run.py::factory: not reduced (breaks 1 -> 1))" in result.err
    assert "fv_first.py:" in result.out and "fv_last.py:" not in result.out  # findings match the disk
    assert result.code == 1, result.err


def test_verify_needs_fix_and_targets(project):
    write(project, "m.py", "x = 1\n")
    assert run_cli("--verify", "m.py", cwd=project).code == 2
    result = run_cli("--fix", "--verify", "m.py", cwd=project)
    assert result.code == 2 and "needs targets" in result.err
