"""Pathological inputs are linted completely: no internal error, no finding lost, whatever the size or depth.

How long they take is measured by ``benchmarks/pathological.py``, never here;
these tests assert behaviour only, on inputs big or deep enough to have
failed before (recursion limits, per-finding rescans).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from graphmend_lint.config import Settings
from graphmend_lint.pipeline import analyze
from graphmend_lint.source import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import pathological


def lint(text: str, scope: str = "compiled") -> tuple[Counter[str], list[str]]:
    outcome = analyze(SourceFile(text), "patho.py", Settings(scope=scope))
    return Counter(d.code for d in outcome.diagnostics), outcome.internal_errors


def test_many_compiled_functions_each_get_their_findings() -> None:
    codes, errors = lint(pathological.many_functions(300))
    assert errors == []
    assert codes["GM101"] == 300 and codes["GM201"] == 300 and codes["GM301"] == 300


def test_every_method_of_a_huge_class_is_reached() -> None:
    codes, errors = lint(pathological.huge_class(300))
    assert errors == []
    assert codes["GM101"] == 300 and codes["GM202"] == 300


def test_helpers_nested_deeper_than_any_fixed_limit_are_reached() -> None:
    codes, errors = lint(pathological.deep_helpers(120))
    assert errors == []
    assert codes["GM201"] == 120


def test_a_name_rebound_thousands_of_times_is_still_a_tensor() -> None:
    lines = ["import torch", "@torch.compile", "def f(x):", "    y = x.relu()"]
    lines += ["    y = y + 1"] * 3000
    lines += ["    if y.sum() > 0:", "        y = -y", "    return y", ""]
    codes, errors = lint("\n".join(lines))
    assert errors == []
    assert codes == Counter({"GM101": 1})


@pytest.mark.parametrize("terms", [600, 1500])
def test_a_sum_nested_deeper_than_the_recursion_limit_is_analyzed(terms: int) -> None:
    total = " + ".join(f"x{i % 3}" for i in range(terms))
    text = (
        "import torch\n@torch.compile\ndef f(x0, x1, x2):\n"
        f"    y = x0.relu() + {total}\n    if y.sum() > 0:\n        print('positive')\n    return y\n"
    )
    codes, errors = lint(text)
    assert errors == []
    assert codes == Counter({"GM101": 1, "GM201": 1})
    assert sys.getrecursionlimit() < 40_000  # the raised limit does not leak out of the pipeline


def test_long_method_chains_and_sums() -> None:
    codes, errors = lint(pathological.long_chains(200))
    assert errors == []
    assert codes == Counter({"GM101": 1, "GM201": 1})


def test_modules_scope_on_many_classes() -> None:
    codes, errors = lint(pathological.many_modules(300), scope="modules")
    assert errors == []
    assert codes["GM101"] == 300
