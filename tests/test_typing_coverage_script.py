"""benchmarks/typing_coverage.py: runtime types against the value oracle, on one small program (eager, no Dynamo)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import typing_coverage  # noqa: E402

PROGRAM = '''
import torch


def helper(a, b):
    keep = a > 0
    total = a + b
    return a[keep], total


@torch.compile
def f(x: torch.Tensor, y):
    n = x.shape[0]
    return helper(x, y), n


def make():
    return f._torchdynamo_orig_callable, [(torch.ones(3), torch.ones(3))]
'''


def test_counts_runtime_tensors_and_which_the_oracle_proves(tmp_path: Path) -> None:
    path = tmp_path / "coverage_case.py"
    path.write_text(textwrap.dedent(PROGRAM))
    coverage = typing_coverage.coverage_of(path)
    unproven = {line.split()[1] for line in coverage.details}
    assert unproven == {"y", "b"}  # a parameter nothing proves a tensor, and the helper's that it is passed to
    assert coverage.tensor_misses == {"parameter": 2}
    assert coverage.tensors == coverage.tensors_proven + 2
    assert (coverage.masks, coverage.masks_proven) == (1, 1)  # ``keep``, read as an index
